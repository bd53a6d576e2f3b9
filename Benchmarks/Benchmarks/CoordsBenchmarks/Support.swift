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
    let rounds = quick ? 9 : (heavy ? 15 : 31)
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .throughput], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 1)
    Benchmark("\(name) ×\(ops) [paired]", configuration: configuration) { _ in
        func batch(_ body: () throws -> Void) rethrows -> Double {
            let start = monotonicSeconds()
            for _ in 0..<ops { try body() }
            return monotonicSeconds() - start
        }
        _ = try batch(ours)  // warm-up of both sides
        _ = try batch(raw)
        var ratios: [Double] = []
        for round in 0..<rounds {
            // A B then B A: neither side always runs first, so a trend in the machine's speed cancels.
            let o: Double
            let r: Double
            if round % 2 == 0 {
                o = try batch(ours)
                r = try batch(raw)
            } else {
                r = try batch(raw)
                o = try batch(ours)
            }
            if o > 0 { ratios.append(r / o) }  // ops/s ours ÷ ops/s raw = time raw ÷ time ours
        }
        ratios.sort()
        guard !ratios.isEmpty else { return }
        func quantile(_ q: Double) -> Double { ratios[min(ratios.count - 1, Int((Double(ratios.count - 1) * q).rounded()))] }
        let safe = name.map { $0.isLetter || $0.isNumber ? $0 : "-" }
        writeSideResult(
            "paired-\(String(safe)).json",
            ["name": name, "median": quantile(0.5), "p25": quantile(0.25), "p75": quantile(0.75), "pairs": ratios.count])
    }
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

/// Test identities and their raw forms for the C baselines.
struct Identity {
    let key: Ed25519SigningKey
    let x25519: X25519PrivateKey
    /// libsodium's 64-byte secret key (seed ‖ public key).
    let rawSecretKey: [UInt8]
    let rawX25519Scalar: [UInt8]

    init() throws {
        key = try Ed25519SigningKey.generate()
        x25519 = try X25519PrivateKey(ed25519: key)
        rawSecretKey = key.seed.copyBytes() + key.publicKey.rawRepresentation
        rawX25519Scalar = x25519.rawRepresentation.copyBytes()
    }
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
        case let text as String: return "\"\(text)\""
        default: return "\(value)"
        }
    }
    let text = render(object) + "\n"
    guard let file = fopen(directory + "/" + name, "w") else { return }
    fputs(text, file)
    fclose(file)
}
