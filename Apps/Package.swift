// swift-tools-version:6.0
// The hosts built on CoordsCore that need a server stack: the relay (Hummingbird) and the CLI
// (AsyncHTTPClient). Kept out of the root package so an app depending on CoordsCore resolves
// only the core's dependencies.
import Foundation
import PackageDescription

// `COORDS_PACKAGE=fuzz` (scripts/fuzz.sh): our modules for libFuzzer with AddressSanitizer, the
// dependencies exactly as in the debug build (see the core's Package.swift).
let fuzzed: [SwiftSetting] =
    ProcessInfo.processInfo.environment["COORDS_PACKAGE"] == "fuzz" ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []

/// The products this package's targets use, named once.
let core = Target.Dependency.product(name: "CoordsCore", package: "CoordsCore")
let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let nio = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let httpClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let relayStack: [Target.Dependency] = [
    hummingbird, .product(name: "HummingbirdCore", package: "hummingbird"), .product(name: "Prometheus", package: "swift-prometheus"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), nio, nioHTTP1,
    .product(name: "NIOHTTPTypes", package: "swift-nio-extras"), .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
    .product(name: "NIOPosix", package: "swift-nio"), httpClient
]

let package = Package(
    name: "CoordsApps",
    products: [
        .library(name: "CoordsRelay", targets: ["CoordsRelay"]),
        .library(name: "CoordsPushGateway", targets: ["CoordsPushGateway"]),
        .executable(name: "coords-relay", targets: ["coords-relay"]),
        .executable(name: "coords", targets: ["coords"]),
        .executable(name: "coords-push-gateway", targets: ["coords-push-gateway"])
    ],
    dependencies: [
        .package(name: "CoordsCore", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // The push gateway only: the P-256 (APNs) and RSA (FCM) signatures libsodium does not have.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2")
    ],
    targets: [
        // The git commit the tools are built from (generated before each build).
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        .target(name: "CoordsBuildInfo", dependencies: [core], swiftSettings: fuzzed, plugins: ["BuildInfoPlugin"]),
        // The trust store our TLS clients use (SSL_CERT_FILE) and what a refused certificate means.
        .target(
            name: "CoordsTLS",
            dependencies: [
                nio, .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl")
            ], swiftSettings: fuzzed),
        .target(name: "CoordsRelay", dependencies: [core, log, "CoordsBuildInfo", "CoordsTLS"] + relayStack, swiftSettings: fuzzed),
        .executableTarget(name: "coords-relay", dependencies: ["CoordsRelay", "CoordsBuildInfo", core, argumentParser, hummingbird, log]),
        .target(
            name: "CoordsCLI",
            dependencies: [
                core, "CoordsBuildInfo", "CoordsTLS", argumentParser, httpClient, nio, nioHTTP1, log, .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl")
            ]),
        .executableTarget(name: "coords", dependencies: ["CoordsCLI", argumentParser]),
        // The push gateway (PROTOCOL.md §8.8): a relay's wake to APNs or FCM.
        .target(
            name: "CoordsPushGateway",
            dependencies: [
                core, log, "CoordsBuildInfo", "CoordsTLS", "CoordsRelay", hummingbird, .product(name: "HummingbirdCore", package: "hummingbird"),
                httpClient, nio, nioHTTP1, .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")
            ], swiftSettings: fuzzed),
        .executableTarget(
            name: "coords-push-gateway", dependencies: ["CoordsPushGateway", "CoordsRelay", "CoordsBuildInfo", core, argumentParser, hummingbird, log]),
        .testTarget(
            name: "CoordsPushGatewayTests",
            dependencies: [
                "CoordsPushGateway", "CoordsRelay", core, log, .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")
            ]),
        .testTarget(name: "CoordsCLITests", dependencies: ["CoordsCLI", "CoordsTLS", core]),
        .testTarget(
            name: "CoordsRelayTests",
            dependencies: [
                "CoordsRelay", "coords-relay", core, .product(name: "HummingbirdTesting", package: "hummingbird"), httpClient,
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
