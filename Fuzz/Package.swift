// swift-tools-version:6.0
// libFuzzer targets for every parser and route (issue 17). Built by scripts/fuzz.sh with
// `-sanitize=fuzzer,address` on our modules only (COORDS_PACKAGE=fuzz in the core's and the
// apps' manifests), in Apps/.build: the dependencies are the debug build's, not compiled again.
// One binary, the target chosen by COORDS_FUZZ_TARGET.
import PackageDescription

let package = Package(
    name: "CoordsFuzz",
    dependencies: [
        .package(name: "CoordsCore", path: ".."),
        .package(name: "CoordsApps", path: "../Apps"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0")
    ],
    targets: [
        .executableTarget(
            name: "CoordsFuzz",
            dependencies: [
                .product(name: "CoordsCore", package: "CoordsCore"), .product(name: "CoordsRelay", package: "CoordsApps"),
                .product(name: "CoordsPushGateway", package: "CoordsApps"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "HTTPTypes", package: "swift-http-types")
            ],
            // libFuzzer supplies main(); the module must not. Linked with libFuzzer and ASan.
            swiftSettings: [.unsafeFlags(["-parse-as-library", "-sanitize=fuzzer,address"])],
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        )
    ],
    swiftLanguageModes: [.v6]
)
