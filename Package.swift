// swift-tools-version:6.0
import PackageDescription

// Layering (data flows one way: source → frames → analysers → events → sinks):
//   CFFTW, CSndFile,     thin system-library targets, C headers only
//   CALSA                (CALSAShim: the few lines of C that ALSA's variadic log handler needs)
//   HarkFFT              owns FFTW plans and buffers
//   HarkSoundFile        owns libsndfile handles; audio files in and out
//   HarkDSP              the DSP core: frames, filters, meter, bands, signal synthesis.
//                        Knows nothing of files, sockets or ALSA.
//   HarkCapture          owns ALSA PCM handles; the capture thread and its ring buffer
//   HarkEngine           wires a source through the analysers into events and sinks
//   hark                 the command line (swift-argument-parser)
let package = Package(
    name: "Hark",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "hark", targets: ["hark"]),
        .library(name: "HarkDSP", targets: ["HarkDSP"]),
        .library(name: "HarkEngine", targets: ["HarkEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
        .target(name: "CALSAShim", dependencies: ["CALSA"]),
        .target(name: "HarkCapture", dependencies: ["CALSA", "CALSAShim"]),
        .target(name: "HarkFFT", dependencies: ["CFFTW"]),
        .target(name: "HarkSoundFile", dependencies: ["CSndFile"]),
        .target(name: "HarkDSP", dependencies: ["HarkFFT"]),
        .target(name: "HarkEngine", dependencies: ["HarkDSP", "HarkSoundFile"]),
        .executableTarget(
            name: "hark",
            dependencies: [
                "HarkEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .testTarget(name: "HarkFFTTests", dependencies: ["HarkFFT"]),
        .testTarget(name: "HarkDSPTests", dependencies: ["HarkDSP"]),
        .testTarget(name: "HarkSoundFileTests", dependencies: ["HarkSoundFile"]),
        .testTarget(name: "HarkEngineTests", dependencies: ["HarkEngine"]),
        .testTarget(name: "HarkCLITests", dependencies: ["hark"]),
        .testTarget(name: "HarkCaptureTests", dependencies: ["HarkCapture"]),
    ]
)
