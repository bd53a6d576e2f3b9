// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "CoordsCore",
    products: [
        .library(name: "CoordsCore", targets: ["CoordsCore"]),
        // libcoordscore.so: the C ABI (include/coordscore.h).
        .library(name: "coordscore", type: .dynamic, targets: ["CoordsFFI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
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
        .target(
            name: "CoordsCore",
            dependencies: ["CSodium", "CLMDB", .product(name: "Logging", package: "swift-log")]
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
            exclude: ["Vectors"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
