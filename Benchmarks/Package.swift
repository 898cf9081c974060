// swift-tools-version:6.0
import Foundation
import PackageDescription

// Benchmarks live in their own package so `swift test` in the project never builds them.
// SwiftPM names a path dependency after its folder, so find out what the checkout is called.
let hark = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let harkIdentity = hark.lastPathComponent.lowercased()

let package = Package(
    name: "HarkBenchmarks",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "hark-bench",
            dependencies: [
                .product(name: "HarkDSP", package: harkIdentity),
                .product(name: "HarkSynthesis", package: harkIdentity),
                .product(name: "HarkEngine", package: harkIdentity),
                .product(name: "HarkCatalogue", package: harkIdentity),
            ]),
        .target(name: "BenchSupport"),
        .executableTarget(
            name: "delivery-bench",
            dependencies: ["BenchSupport", .product(name: "HarkSpool", package: harkIdentity)]),
        .executableTarget(
            name: "harkd-stress",
            dependencies: ["BenchSupport", .product(name: "HarkClient", package: harkIdentity),
                           .product(name: "HarkDSP", package: harkIdentity),
                           .product(name: "HarkSystem", package: harkIdentity)]),
        .executableTarget(name: "live-embed-bench", dependencies: ["BenchSupport"]),
        .executableTarget(
            name: "harkd-bench",
            dependencies: ["BenchSupport", .product(name: "HarkClient", package: harkIdentity)]),
    ]
)
