// The instruction-count gate's workload (scripts/bench-check.py, `make bench-check`): one hot
// operation, through CoordsCore ("ours") or the same libsodium/LMDB calls in C ("c"), run
// `iterations` times between callgrind markers after one warm-up run. Instruction counts repeat
// exactly on the same binary, so the ratio ours ÷ c is a regression gate that noise cannot move.
//
// The manager paths (prepare upload, process a fetch) run on their actors, so on libdispatch
// worker threads. Debian's valgrind 3.19 crashes when a worker thread starts while the main
// thread sits in `dispatch_main` (what an `async` top level does), so `main` stays synchronous:
// it starts the workload as a detached task and waits on a semaphore. Callgrind sums all threads.
//
//   InstructionGate list                 the operations, one per line: name iterations budget
//   InstructionGate run NAME ours|c      set up, warm up, then the measured loop
//
// `COORDS_GATE_ITERATIONS=N` runs N iterations instead of the operation's own count: a longer
// loop to profile with `perf record` (the gate itself never sets it); the loop's wall-clock time
// per iteration is then printed to standard error.
import CBaseline
import CoordsCore
import Dispatch
import GateMarkers

#if canImport(Glibc)
import Glibc
#endif

// MARK: Main

let arguments = CommandLine.arguments.dropFirst()
guard cb_init() >= 0 else { fail("libsodium did not initialise") }
switch arguments.first {
case "list":
    for operation in operations { print("\(operation.name) \(operation.iterations) \(operation.budget)") }
case "run":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 2, let operation = operations.first(where: { $0.name == rest[0] }), rest[1] == "ours" || rest[1] == "c" else {
        fail("usage: InstructionGate run NAME ours|c (names: InstructionGate list)")
    }
    // A profiling run's own count (1…10,000,000; anything else is refused).
    let iterationsOverride: Int? = getenv("COORDS_GATE_ITERATIONS").map { text in
        guard let count = Int(String(cString: text)), (1...10_000_000).contains(count) else { fail("COORDS_GATE_ITERATIONS: 1 to 10000000") }
        return count
    }
    // Synchronous on purpose (see the top of the file): the workload runs as a detached task.
    let done = DispatchSemaphore(value: 0)
    let side = rest[1]
    Task.detached {
        do {
            let (ours, c) = try await operation.setup()
            let iterations = iterationsOverride ?? operation.iterations
            /// A profiling run's time per iteration, from `start` (nanoseconds).
            func report(_ start: UInt64) {
                guard iterationsOverride != nil else { return }
                let line = Array("\(operation.name) \(side): \((nanoseconds() - start) / UInt64(iterations) / 1000) µs per iteration\n".utf8)
                _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            }
            // Each side warms up once first: first-use costs (caches, lazy tables) stay out of the count.
            if side == "ours", case .sync(let run) = ours {
                try run()
                let start = nanoseconds()
                gate_begin()
                for _ in 0..<iterations { try run() }
                gate_end()
                report(start)
            } else if side == "ours", case .async(let run) = ours {
                try await run()
                let start = nanoseconds()
                gate_begin()
                for _ in 0..<iterations { try await run() }
                gate_end()
                report(start)
            } else {
                try c()
                let start = nanoseconds()
                gate_begin()
                for _ in 0..<iterations { try c() }
                gate_end()
                report(start)
            }
        } catch {
            fail("\(operation.name): \(error)")
        }
        done.signal()
    }
    done.wait()
default:
    fail("usage: InstructionGate list | run NAME ours|c")
}

/// The monotonic clock in nanoseconds.
func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
