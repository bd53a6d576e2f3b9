// swift-tools-version:6.0
// CoordsCore: the core library and its C ABI (libcoordscore.so). It depends on swift-log and the
// system's libsodium and LMDB only, so an app that depends on it resolves nothing else. The
// relay and the CLI, with their server stack, are a package of their own in Apps/.
import PackageDescription

let package = Package(
    name: "CoordsCore",
    products: [
        .library(name: "CoordsCore", targets: ["CoordsCore"]),
        // libcoordscore.so: the C ABI (include/coordscore.h).
        .library(name: "coordscore", type: .dynamic, targets: ["CoordsFFI"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
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
    ],
    swiftLanguageModes: [.v6]
)
