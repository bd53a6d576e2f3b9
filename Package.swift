// swift-tools-version:6.0
// CoordsCore: the core library and its C ABI (libcoordscore.so). It depends on swift-log and the
// system's libsodium and LMDB only, so an app that depends on it resolves nothing else. The
// relay and the CLI, with their server stack, are a package of their own in Apps/.
import Foundation
import PackageDescription

// `COORDS_PACKAGE=channel` (make test-tsan and test-release only): the package is the channel
// layer alone — module CoordsCore from Sources/CoordsCore/Channel, its locks and the error protocol —
// and the channel suites, so the ThreadSanitizer and optimised runs of the concurrency code build a few
// hundred lines instead of the whole core a second and a third time. The module keeps its name,
// so the suites compile unchanged (`@testable import CoordsCore`).
let channelOnly = ProcessInfo.processInfo.environment["COORDS_PACKAGE"] == "channel"

// `COORDS_PACKAGE=fuzz` (scripts/fuzz.sh): our modules are compiled for libFuzzer with
// AddressSanitizer and every dependency exactly as in the debug build, so the fuzz build shares
// Apps/.build and compiles only our code again, not the server stack.
let fuzzing = ProcessInfo.processInfo.environment["COORDS_PACKAGE"] == "fuzz"
let fuzzed: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []

let products: [Product] = [
    .library(name: "CoordsCore", targets: ["CoordsCore"]),
    // libcoordscore.so: the C ABI (include/coordscore.h).
    .library(name: "coordscore", type: .dynamic, targets: ["CoordsFFI"])
]

let targets: [Target] = [
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
    // Offline geocoding data, compiled into the library with #embed (see Sources/CGeoData/CGeoData.c).
    // The one place the C library is reached: POSIX headers and the calls that differ by platform.
    .target(name: "CPlatform"),
    .target(
        name: "CGeoData",
        exclude: ["places15000.cgeo"],
        cSettings: [.headerSearchPath(".")]
    ),
    .target(
        name: "CoordsCore",
        dependencies: ["CSodium", "CLMDB", "CGeoData", "CPlatform", .product(name: "Logging", package: "swift-log")],
        swiftSettings: fuzzed
    ),
    .systemLibrary(name: "CCoordsABI", path: "Sources/CCoordsABI"),
    .target(
        name: "CoordsFFI",
        dependencies: ["CoordsCore", "CCoordsABI", "CPlatform"]
    ),
    .executableTarget(
        name: "StoreCrashChild",
        dependencies: ["CoordsCore"],
        path: "Tests/StoreCrashChild"
    ),
    .testTarget(
        name: "CoordsCoreTests",
        dependencies: ["CoordsCore", "StoreCrashChild"],
        exclude: ["Vectors", "KnownAnswers"]
    ),
    .testTarget(
        name: "CoordsFFITests",
        dependencies: ["CoordsFFI", "CoordsCore"]
    )
]

let channelTargets: [Target] = [
    .target(name: "CPlatform"),
    .target(
        name: "CoordsCore", dependencies: ["CPlatform"], path: "Sources/CoordsCore",
        sources: ["Channel", "CoordsCoreError.swift", "Support/Locks.swift"]),
    .testTarget(
        name: "CoordsCoreTests",
        dependencies: ["CoordsCore"],
        path: "Tests/CoordsCoreTests",
        sources: ["Channel", "Support/Concurrency.swift"]
    )
]

let package = Package(
    name: "CoordsCore",
    // The minimum platforms (docs/MOBILE.md): Synchronization's Mutex and Atomic need iOS 18 and
    // macOS 15; Android needs API level 28 (the Swift SDK for Android's floor); Linux any glibc
    // ≥ 2.35 (the wheel's manylinux tag).
    platforms: [.iOS(.v18), .macOS(.v15)],
    products: channelOnly ? [] : products,
    // Declared in both forms, so the channel build resolves the same pins as the full one.
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
    ],
    targets: channelOnly ? channelTargets : targets,
    swiftLanguageModes: [.v6]
)
