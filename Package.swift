// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "CoordsCore",
    products: [
        .library(name: "CoordsCore", targets: ["CoordsCore"]),
        // libcoordscore.so: the C ABI (include/coordscore.h).
        .library(name: "coordscore", type: .dynamic, targets: ["CoordsFFI"]),
        .library(name: "CoordsRelay", targets: ["CoordsRelay"]),
        .executable(name: "coords-relay", targets: ["coords-relay"]),
        .executable(name: "coords", targets: ["coords"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // Offline geocoding data, assembled into the library (see Sources/CGeoData/places.S).
        .target(
            name: "CGeoData",
            exclude: ["places15000.cgeo"],
            cSettings: [.headerSearchPath(".")]
        ),
        .target(
            name: "CoordsCore",
            dependencies: ["CSodium", "CLMDB", "CGeoData", .product(name: "Logging", package: "swift-log")]
        ),
        .systemLibrary(name: "CCoordsABI", path: "Sources/CCoordsABI"),
        .target(
            name: "CoordsFFI",
            dependencies: ["CoordsCore", "CCoordsABI"]
        ),
        .target(
            name: "CoordsRelay",
            dependencies: [
                "CoordsCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "coords-relay",
            dependencies: [
                "CoordsRelay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "CoordsCLI",
            dependencies: [
                "CoordsCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "coords",
            dependencies: ["CoordsCLI", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .executableTarget(
            name: "StoreCrashChild",
            dependencies: ["CoordsCore"],
            path: "Tests/StoreCrashChild"
        ),
        .testTarget(
            name: "CoordsCLITests",
            dependencies: ["CoordsCLI", "CoordsCore"],
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "CoordsRelayTests",
            dependencies: [
                "CoordsRelay", "CoordsCore", "coords-relay",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "CoordsCoreTests",
            dependencies: ["CoordsCore", "StoreCrashChild"],
            exclude: ["Vectors", "KnownAnswers"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
