# Sourced by the tools: puts a Swift toolchain on PATH when it is installed but not on PATH.
if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin "$HOME/.local/share/swiftly/bin"; do
        if [ -x "$candidate/swift" ]; then export PATH="$candidate:$PATH"; break; fi
    done
fi

# Release builds link the Swift runtime statically: the binaries run on a device with no Swift
# toolchain, and harkd maps only the parts of the runtime it uses (docs/daemon.md).
release_build=(swift build -c release --static-swift-stdlib)

# ...and with the toolchain's lld, packing the executable's relative relocations (DT_RELR,
# glibc 2.36 or later): a static Swift runtime in a position-independent executable has 90 000
# of them, 2.2 MB the loader reads and applies at every start. Without lld, the default linker.
swift_bin=$(dirname "$(readlink -f "$(command -v swift)")")
if [ -x "$swift_bin/ld.lld" ]; then
    mkdir -p .build
    cat > .build/release-toolset.json <<JSON
{"schemaVersion": "1.0", "linker": {"path": "$swift_bin/ld.lld", "extraCLIOptions": ["-z", "pack-relative-relocs"]}}
JSON
    release_build+=(--toolset "$PWD/.build/release-toolset.json")
fi

# Builds one of the benchmarks (Benchmarks/, a package of its own) in release mode. Its build
# plan is dropped first: SwiftPM does not notice a file added to Hark, which the benchmarks reach
# as a path dependency, and would build from the old plan (re-planning costs a second).
build_benchmark() {
    rm -f Benchmarks/.build/release.yaml
    (cd Benchmarks && swift build -c release --product "$1")
}
