import BenchSupport
import Benchmark
import CBaseline
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// `COORDS_BENCH_QUICK=1` (make bench-quick) shortens every benchmark.
let quick = getenv("COORDS_BENCH_QUICK") != nil

/// The configuration of every benchmark: wall clock and allocations, a time budget per row.
func configuration(heavy: Bool = false) -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        warmupIterations: heavy ? 1 : 3,
        maxDuration: .milliseconds(quick ? (heavy ? 400 : 150) : (heavy ? 4000 : 1500)),
        maxIterations: quick ? (heavy ? 3 : 200) : (heavy ? 30 : 100_000))
}

/// Registers a pair of rows: our API and the raw C sequence, `ops` operations per iteration.
/// The report divides by `ops` (encoded as `×N` in the name) and pairs `[ours]` with `[raw]`.
/// A third row, `[paired]`, measures the ratio itself (see ``paired(_:ops:heavy:ours:raw:)``).
func pair(
    _ name: String, ops: Int, heavy: Bool = false,
    ours: @escaping @Sendable () throws -> Void, raw: @escaping @Sendable () throws -> Void
) {
    Benchmark("\(name) ×\(ops) [ours]", configuration: configuration(heavy: heavy)) { benchmark in
        for _ in 0..<ops { try ours() }
    }
    Benchmark("\(name) ×\(ops) [raw]", configuration: configuration(heavy: heavy)) { benchmark in
        for _ in 0..<ops { try raw() }
    }
    paired(name, ops: ops, heavy: heavy, ours: ours, raw: raw)
}

/// The ratio ours ÷ raw measured so a busy machine slows both alike: short batches of each
/// (`ops` operations), interleaved A B B A … in one process, one ratio per adjacent pair of
/// batches; the report uses their median and their spread (interquartile range ÷ median), and a
/// row whose spread is too wide says so instead of passing or failing. Written to
/// `paired-<name>.json` in $COORDS_BENCH_OUT.
func paired(
    _ name: String, ops: Int, heavy: Bool = false,
    ours: @escaping @Sendable () throws -> Void, raw: @escaping @Sendable () throws -> Void
) {
    pairedWithSetup(name, ops: ops, heavy: heavy) { (ours, raw, {}) }
}

/// ``paired(_:ops:heavy:ours:raw:)`` for sides that need a setup (a filled store, an app with
/// friends): `make` runs once inside the benchmark, then both sides run as above, then `close`.
func pairedWithSetup(
    _ name: String, ops: Int, heavy: Bool = false,
    make: @escaping @Sendable () throws -> (ours: () throws -> Void, raw: () throws -> Void, close: () -> Void)
) {
    Benchmark("\(name) ×\(ops) [paired]", configuration: pairedConfiguration()) { _ in
        let (ours, raw, close) = try make()
        defer { close() }
        func batch(_ body: () throws -> Void) rethrows -> Double {
            let start = monotonicSeconds()
            for _ in 0..<ops { try body() }
            return monotonicSeconds() - start
        }
        writePaired(name, try await interleavedRatios(rounds: pairedRounds(heavy: heavy), ours: { try batch(ours) }, raw: { try batch(raw) }))
    }
}

/// The paired ratio of an async path of ours (a manager call: an actor hop per operation)
/// against a synchronous C floor.
func pairedAsync(
    _ name: String, ops: Int,
    make: @escaping @Sendable () async throws -> (ours: () async throws -> Void, raw: () throws -> Void, close: () -> Void)
) {
    Benchmark("\(name) ×\(ops) [paired]", configuration: pairedConfiguration()) { _ in
        let (ours, raw, close) = try await make()
        defer { close() }
        let ratios = try await interleavedRatios(
            rounds: pairedRounds(heavy: true),
            ours: {
                let start = monotonicSeconds()
                for _ in 0..<ops { try await ours() }
                return monotonicSeconds() - start
            },
            raw: {
                let start = monotonicSeconds()
                for _ in 0..<ops { try raw() }
                return monotonicSeconds() - start
            })
        writePaired(name, ratios)
    }
}

func pairedConfiguration() -> Benchmark.Configuration {
    Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 1)
}

/// Pairs per ratio row: enough that the median and quartiles of a noisy machine repeat between
/// runs (15 and 31 left two rows of a run outside the spread of the next).
func pairedRounds(heavy: Bool) -> Int { quick ? 9 : (heavy ? 31 : 61) }

/// After one warm-up batch of each side, `rounds` pairs A B then B A (neither side always runs
/// first, so a trend in the machine's speed cancels); one ratio (time raw ÷ time ours, i.e.
/// ops/s ours ÷ ops/s raw) per pair, in the order the pairs ran (the report compares the first
/// half of a run with the second to see drift).
func interleavedRatios(rounds: Int, ours: () async throws -> Double, raw: () async throws -> Double) async rethrows -> [Double] {
    _ = try await ours()
    _ = try await raw()
    var ratios: [Double] = []
    for round in 0..<rounds {
        let o: Double
        let r: Double
        if round % 2 == 0 {
            o = try await ours()
            r = try await raw()
        } else {
            r = try await raw()
            o = try await ours()
        }
        if o > 0 { ratios.append(r / o) }
    }
    return ratios
}

/// Writes the median and quartiles of the per-pair `ratios` (in the order they ran) and the
/// ratios themselves for scripts/bench-report.py.
func writePaired(_ name: String, _ ratios: [Double]) {
    guard !ratios.isEmpty else { return }
    let sorted = ratios.sorted()
    func quantile(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))] }
    let safe = name.map { $0.isLetter || $0.isNumber ? $0 : "-" }
    writeSideResult(
        "paired-\(String(safe)).json",
        ["name": name, "median": quantile(0.5), "p25": quantile(0.25), "p75": quantile(0.75), "pairs": ratios.count, "ratios": ratios])
}

/// A C handle shared with benchmark closures (each benchmark uses it from one task at a time).
struct SendableHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

func randomBytes(_ count: Int) -> [UInt8] { (try? SystemRandomSource().bytes(count)) ?? [] }

/// Scratch directories for store benchmarks, removed afterwards.
func temporaryDirectory(_ label: String) -> String {
    var template = Array("/tmp/coords-bench-\(label)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return "/tmp/coords-bench-\(label)" }
        return String(cString: made)
    }
}

func removeDirectory(_ path: String) {
    for file in ["data.mdb", "lock.mdb"] { unlink(path + "/" + file) }
    rmdir(path)
}

extension Identity {
    /// A fresh identity.
    init() throws { try self.init(key: Ed25519SigningKey.generate()) }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func environmentValue(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

/// Writes facts that are not timings (memory of loaded data…) next to the JMH results, in
/// $COORDS_BENCH_OUT, for scripts/bench-report.py.
func writeSideResult(_ name: String, _ object: [String: Any]) {
    guard let directory = environmentValue("COORDS_BENCH_OUT") else { return }
    func render(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: Any]:
            return "{" + dictionary.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \(render($0.value))" }.joined(separator: ", ") + "}"
        case let array as [Any]: return "[" + array.map(render).joined(separator: ", ") + "]"
        case let text as String: return "\"\(text)\""
        case let number as Double: return number.isFinite ? "\(number)" : "null"
        default: return "\(value)"
        }
    }
    let text = render(object) + "\n"
    // package-benchmark empties its --path directory before a run and makes it again only when it
    // writes its own results at the end: without this, every side result was silently lost.
    _ = mkdir(directory, 0o755)
    guard let file = fopen(directory + "/" + name, "w") else {
        var complaint = "CoordsBenchmarks: cannot write \(directory)/\(name)\n"
        complaint.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        return
    }
    fputs(text, file)
    fclose(file)
}

/// A position in a key list that batches walk through (one benchmark task uses it at a time).
final class Cursor: @unchecked Sendable {
    private var value = 0
    /// The current position; then moves `step` on, back to 0 when the next step would pass `end`.
    func advance(by step: Int, wrappingAt end: Int) -> Int {
        if value + step > end { value = 0 }
        defer { value += step }
        return value
    }
}

/// A benchmark whose setup failed: the run stops with this message instead of measuring nothing.
struct BenchmarkSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
