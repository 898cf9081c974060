// swift-tools-version:6.0
import PackageDescription

// Layering (data flows one way: source → frames → analysers → events → sinks):
//   CFFTW, CSndFile,     thin system-library targets, C headers only
//   CSQLite, CMosquitto,
//   CCairo
//   CALSA                (CALSAShim: the few lines of C that ALSA's variadic log handler needs)
//   HarkSystem           POSIX locks, threads, subprocesses, text for the manual pages (so no target needs Foundation's
//                        full module and its ICU; FoundationEssentials is enough)
//   COpenBLAS            OpenBLAS's CBLAS header, for the sound embedder's matrix products
//   CSoundModel          the sound embedder's trained weights, linked into the binary
//   HarkFFT              owns FFTW plans and buffers
//   HarkBLAS             OpenBLAS's sgemm, single-threaded
//   HarkSoundFile        owns libsndfile handles; audio files in and out
//   HarkDSP              the DSP core: frames, filters, meter, bands, the mark, the sound
//                        readings. Knows nothing of files, sockets or ALSA.
//   HarkSynthesis        test signals, generated programme and the Stadium Shake cue (hark generate,
//                        the benches)
//   HarkCapture          owns ALSA PCM handles; the capture thread and its ring buffer
//   HarkSQLite           owns SQLite connections and statements; result codes as Swift errors
//   HarkSpool            the durable queue of records to deliver (a SQLite file)
//   HarkMQTT             owns the libmosquitto client handle: the uplink's transport
//   HarkCatalogue        the campaign catalogue: a SQLite file of payloads, dates and sound
//                        readings
//   HarkPlot             owns cairo surfaces: levels, spectra and spectrograms as PNG or SVG
//   HarkEngine           wires a source through the analysers into events and sinks
//   HarkSimulation       the acoustic path from a broadcast to a microphone (hark simulate, the
//                        benches): rooms, noise, codecs, drift. harkd does not link it
//   HarkLab              the benches (generated and recorded hosts, the audfprint anchor):
//                        linked by hark-lab alone
//   HarkDaemon           harkd's service: sessions, the JSON-lines socket protocol (SwiftNIO),
//                        configuration, systemd integration
//   HarkClient           a small blocking client of that protocol (plain POSIX sockets)
//   hark, harkd          the command line and the daemon (swift-argument-parser)
//   hark-lab             the benches' command line
let package = Package(
    name: "Hark",
    products: [
        .executable(name: "hark", targets: ["hark"]),
        .executable(name: "harkd", targets: ["harkd"]),
        .executable(name: "hark-lab", targets: ["hark-lab"]),
        // Hark is an application. These libraries are for the benchmarks beside it
        // (Benchmarks/, a path dependency); HarkDSP's `unsafeFlags` below mean no package can
        // depend on Hark by version, which is deliberate: programs talk to harkd over its socket
        // (docs/protocol.md), not by linking the engine.
        .library(name: "HarkDSP", targets: ["HarkDSP"]),
        .library(name: "HarkSynthesis", targets: ["HarkSynthesis"]),
        .library(name: "HarkEngine", targets: ["HarkEngine"]),
        .library(name: "HarkClient", targets: ["HarkClient"]),
        .library(name: "HarkSpool", targets: ["HarkSpool"]),
        .library(name: "HarkSystem", targets: ["HarkSystem"]),
        .library(name: "HarkCatalogue", targets: ["HarkCatalogue"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFTW", pkgConfig: "fftw3f",
            providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(
            name: "CSndFile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(
            name: "CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(
            name: "COpenBLAS", pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"])]),
        // The weights file is assembled into the object (.incbin), found through this folder.
        .target(name: "CSoundModel", exclude: ["sound-embedder.hkse"], cSettings: [.headerSearchPath(".")]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // Headers only: HarkMQTT loads libmosquitto with dlopen when an uplink is configured,
        // so a harkd without one does not map it or the OpenSSL it brings.
        .systemLibrary(
            name: "CMosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        // Only `hark` links cairo (for `hark plot`); harkd does not.
        .systemLibrary(
            name: "CCairo", pkgConfig: "cairo",
            providers: [.apt(["libcairo2-dev"])]),
        .target(name: "CALSAShim", dependencies: ["CALSA"]),
        // Locks, threads and subprocesses on POSIX: what the other targets would otherwise take
        // from Foundation's full module (and its ICU) rather than FoundationEssentials.
        .target(name: "HarkSystem"),
        .target(name: "HarkCapture", dependencies: ["CALSA", "CALSAShim", "HarkSystem"]),
        .target(name: "HarkFFT", dependencies: ["CFFTW", "HarkSystem"]),
        .target(name: "HarkBLAS", dependencies: ["COpenBLAS"]),
        .target(name: "HarkSoundFile", dependencies: ["CSndFile", "HarkSystem"]),
        .target(name: "HarkSQLite", dependencies: ["CSQLite"]),
        .target(name: "HarkSpool", dependencies: ["HarkSQLite", "HarkSystem"]),
        .target(name: "HarkMQTT", dependencies: ["CMosquitto"]),
        .target(name: "HarkCatalogue", dependencies: ["HarkSQLite", "HarkDSP", "HarkSystem"]),
        .target(name: "HarkPlot", dependencies: ["CCairo", "HarkSystem"]),
        // Optimised in debug builds too: unoptimised, the watermark detector's vector code runs
        // at about 2.5x real time (190x optimised), too slow for harkd to keep up with the
        // 2x-real-time capture the daemon tests feed it (the tests build everything in debug).
        .target(name: "HarkDSP", dependencies: ["HarkFFT", "HarkBLAS", "CSoundModel"],
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // Test signals and generated programme (music, speech-like babble, the stadium cue): what
        // hark generate writes and the benches play, not part of the analysis.
        .target(name: "HarkSynthesis", dependencies: ["HarkDSP"]),
        .target(name: "HarkEngine", dependencies: ["HarkDSP", "HarkSoundFile", "HarkSystem"]),
        // What `hark simulate` and the benches put between a broadcast and a microphone. Not the
        // analysis: harkd links neither it nor the synthesis it plays.
        .target(name: "HarkSimulation", dependencies: ["HarkEngine", "HarkDSP", "HarkSynthesis", "HarkSoundFile", "HarkSystem"]),
        // The lab: benches on generated and recorded audio, the audfprint anchor. hark and
        // harkd do not link it; hark-lab runs it.
        .target(name: "HarkLab", dependencies: ["HarkEngine", "HarkSimulation", "HarkDSP", "HarkSynthesis", "HarkSoundFile", "HarkSystem"]),
        .target(
            name: "HarkDaemon",
            dependencies: [
                "HarkEngine", "HarkDSP", "HarkCapture", "HarkSpool", "HarkMQTT", "HarkSystem", "HarkCatalogue",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]),
        .target(name: "HarkClient", dependencies: ["HarkSystem"]),
        .executableTarget(
            name: "hark",
            dependencies: [
                "HarkEngine", "HarkSimulation", "HarkDSP", "HarkSynthesis", "HarkSoundFile", "HarkClient", "HarkSpool", "HarkPlot", "HarkCatalogue", "HarkCapture",
                "HarkSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "hark-lab",
            dependencies: [
                "HarkLab", "HarkEngine", "HarkDSP", "HarkSoundFile",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "harkd",
            dependencies: [
                "HarkDaemon", "HarkEngine", "HarkCapture", "HarkSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "HarkSystemTests", dependencies: ["HarkSystem"]),
        .testTarget(name: "HarkFFTTests", dependencies: ["HarkFFT"]),
        .testTarget(name: "HarkDSPTests", dependencies: ["HarkDSP", "HarkFFT", "HarkSynthesis"], exclude: ["Fixtures"]),
        .testTarget(name: "HarkSynthesisTests", dependencies: ["HarkSynthesis", "HarkDSP"]),
        .testTarget(name: "HarkSoundFileTests", dependencies: ["HarkTesting", "HarkSoundFile"]),
        .testTarget(name: "HarkSpoolTests", dependencies: ["HarkTesting", "HarkSpool", "HarkSQLite"]),
        .testTarget(name: "HarkCatalogueTests", dependencies: ["HarkTesting", "HarkCatalogue", "HarkDSP", "HarkSynthesis"]),
        .testTarget(name: "HarkPlotTests", dependencies: ["HarkTesting", "HarkPlot"]),
        .testTarget(name: "HarkEngineTests", dependencies: ["HarkTesting", "HarkEngine", "HarkSynthesis"]),
        .testTarget(name: "HarkSimulationTests", dependencies: ["HarkSimulation", "HarkSoundFile", "HarkTesting"]),
        .testTarget(name: "HarkLabTests", dependencies: ["HarkTesting", "HarkLab", "HarkSimulation", "HarkEngine", "HarkDSP", "HarkFFT", "HarkSynthesis"]),
        .testTarget(name: "HarkCLITests", dependencies: ["hark", "hark-lab", "HarkCatalogue", "HarkDSP", "HarkPlot", "HarkTesting"]),
        // Test doubles for capture (ALSA file-plugin configurations, fault injection), shared
        // by the capture and daemon tests.
        .target(name: "HarkCaptureTesting", dependencies: ["HarkCapture"], path: "Tests/HarkCaptureTesting"),
        // A temporary directory that removes itself, for the tests that write files.
        .target(name: "HarkTesting", path: "Tests/HarkTesting"),
        .testTarget(name: "HarkCaptureTests", dependencies: ["HarkCapture", "HarkCaptureTesting"]),
        .testTarget(
            name: "HarkDaemonTests",
            dependencies: [
                "HarkDaemon", "HarkClient", "HarkCapture", "HarkCaptureTesting", "HarkSpool", "HarkSQLite", "HarkSynthesis", "HarkSystem", "HarkTesting", "HarkCatalogue",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "HarkDaemonEndToEndTests", dependencies: ["harkd", "hark", "HarkClient", "HarkSpool", "HarkSystem", "HarkSoundFile"]),
    ]
)
