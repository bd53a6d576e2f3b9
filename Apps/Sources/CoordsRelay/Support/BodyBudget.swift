import Synchronization

/// The bytes of request bodies the relay holds in memory at once, across every connection: a
/// route reserves a body's declared length (or its limit, for a body without `Content-Length`)
/// before it reads a byte of it, and gives it back when the request ends. Past the budget the
/// request is answered 503 `busy` with `Retry-After` and its body is never read, so slow or
/// unfinished bodies cannot take the relay's memory.
final class BodyBudget: Sendable {
    /// Most bytes reserved at once.
    let capacity: Int
    private let reserved = Mutex(0)

    /// A budget of `capacity` bytes (at least one).
    init(capacity: Int) { self.capacity = max(capacity, 1) }

    /// Reserves `count` bytes; false (nothing reserved) when that would pass the capacity.
    func reserve(_ count: Int) -> Bool {
        reserved.withLock { current in
            guard count >= 0, count <= capacity - current else { return false }
            current += count
            return true
        }
    }

    /// Gives back `count` bytes reserved before.
    func release(_ count: Int) {
        reserved.withLock { current in current = max(current - max(count, 0), 0) }
    }

    /// Bytes reserved now (tests and metrics).
    var inUse: Int { reserved.withLock { $0 } }
}
