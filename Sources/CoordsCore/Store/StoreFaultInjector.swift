import Synchronization

/// Testing only: makes chosen LMDB calls of one ``Database`` fail with a chosen error code, so a
/// test can walk a failure over every step of a write path (disk full at the first put, at the
/// commit, at the map resize, …) and check that the database still reads, writes, grows and
/// closes afterwards, and that nothing acknowledged was lost.
///
/// ```swift
/// let injector = StoreFaultInjector()
/// var options = Database.Options()
/// options.faultInjector = injector
/// injector.failCall(3, with: ENOSPC)          // the third counted LMDB call fails, once
/// ```
/// Set it through `Database.Options.faultInjector` (`@_spi(Testing) import CoordsCore`).
/// Only calls whose ``Operation`` is in ``operations`` are counted.
@_spi(Testing)
public final class StoreFaultInjector: Sendable {
    /// The LMDB calls that can be made to fail.
    public enum Operation: String, Sendable, CaseIterable {
        /// `mdb_env_open`.
        case open
        /// `mdb_txn_begin` of a write transaction / of a read transaction.
        case beginWrite, beginRead
        /// `mdb_put`.
        case put
        /// `mdb_del`.
        case delete
        /// `mdb_txn_commit` (the transaction is aborted, as a failed commit does).
        case commit
        /// `mdb_env_set_mapsize` when the map grows.
        case resize
    }

    private struct State {
        var calls = 0
        var failAt: Int?
        var code: Int32 = 0
        var failures: [(Operation, Int32)] = []
    }

    /// The operations counted (all but read-transaction begins by default).
    public let operations: Set<Operation>
    private let state = Mutex(State())

    public init(operations: Set<Operation> = Set(Operation.allCases).subtracting([.beginRead])) {
        self.operations = operations
    }

    /// Makes counted call number `n` (1-based, counting from now on the running total) fail once with `code`.
    public func failCall(_ n: Int, with code: Int32) {
        state.withLock { state in
            state.failAt = state.calls + n
            state.code = code
        }
    }

    /// Counted calls so far.
    public var calls: Int { state.withLock { $0.calls } }

    /// The failures injected so far, in order.
    public var injected: [(operation: Operation, code: Int32)] { state.withLock { $0.failures.map { ($0.0, $0.1) } } }

    /// Called by the store before each LMDB call: the code to fail with, or nil to make the call.
    func fault(_ operation: Operation) -> Int32? {
        guard operations.contains(operation) else { return nil }
        return state.withLock { state -> Int32? in
            state.calls += 1
            guard let failAt = state.failAt, state.calls == failAt else { return nil }
            state.failAt = nil
            state.failures.append((operation, state.code))
            return state.code
        }
    }
}
