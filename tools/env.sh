# Sourced by the tools: puts a Swift toolchain on PATH when it is installed but not on PATH.
if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin "$HOME/.local/share/swiftly/bin"; do
        if [ -x "$candidate/swift" ]; then export PATH="$candidate:$PATH"; break; fi
    done
fi

# Release builds link the Swift runtime and Foundation into the binaries: they run on a device
# with no Swift toolchain, and harkd's resident memory is about 5 MB smaller (docs/daemon.md).
release_build=(swift build -c release --static-swift-stdlib)
