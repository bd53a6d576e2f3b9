// swift-tools-version:6.1
// The benchmark suite: its own package so the main build and CI stay lean. `make bench` runs it.
import PackageDescription

let package = Package(
    name: "CoordsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "CoordsCore", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"])
    ],
    targets: [
        // Raw C: the same libsodium/LMDB call sequences, nothing around them.
        .target(
            name: "CBaseline",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("lmdb")]
        ),
        // What the suite and the gate both build (identities, a signed fetch answer and its C floor).
        .target(name: "BenchSupport", dependencies: [.product(name: "CoordsCore", package: "CoordsCore"), "CBaseline"]),
        .executableTarget(
            name: "CoordsBenchmarks",
            dependencies: [
                .product(name: "CoordsCore", package: "CoordsCore"),
                .product(name: "Benchmark", package: "benchmark"),
                "CBaseline", "BenchSupport"
            ],
            path: "Benchmarks/CoordsBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The instruction-count gate (make bench-check, in make test): callgrind markers and the workload.
        .target(name: "GateMarkers"),
        .executableTarget(
            name: "InstructionGate",
            dependencies: [.product(name: "CoordsCore", package: "CoordsCore"), "CBaseline", "GateMarkers", "BenchSupport"],
            path: "Sources/InstructionGate"
        ),
        // The migration of a 1.0.0 store into the sealed store: time and peak memory (make bench).
        .executableTarget(
            name: "MigrationBench",
            dependencies: [.product(name: "CoordsCore", package: "CoordsCore")],
            path: "Sources/MigrationBench"
        ),
        // Prepares signed request bodies for the relay load test (run before wrk).
        .executableTarget(
            name: "RelayLoadBodies",
            dependencies: [.product(name: "CoordsCore", package: "CoordsCore")],
            path: "Sources/RelayLoadBodies"
        )
    ]
)
