import CoordsCore
import Synchronization

/// Signatures of recipient requests already accepted (§7.3: each is accepted once), kept until
/// their timestamp leaves the skew window, after which the timestamp check refuses them anyway.
///
/// Entries live in time buckets of ``bucketSeconds`` by expiry, so forgetting old ones costs
/// O(1) amortised (a whole bucket goes at once, and there are at most `2·skew / bucketSeconds + 1`
/// live buckets to look at), never a scan of the whole set under the lock. Memory is bounded by
/// `capacity`: past it new signatures are refused (503) rather than old ones forgotten early,
/// which would let them be replayed. Only the signature's first 32 bytes (Ed25519's `R`, unique
/// per key and message) are kept. This is the memory store's table; LMDB and PostgreSQL keep
/// theirs on disk.
final class SeenSignatures: Sendable {
    typealias Outcome = SignatureAcceptance

    private struct Key: Hashable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64
    }

    private struct State {
        var members: Set<Key> = []
        var buckets: [UInt64: [Key]] = [:]
        /// The smallest bucket number present (nil when empty).
        var oldest: UInt64?
    }

    static let bucketSeconds: UInt64 = 16
    private let state = Mutex(State())

    init() {}

    /// Records `r` (valid until `until`, Unix seconds) at `now`: `.accepted` the first
    /// time, `.replayed` after, `.full` when `capacity` live signatures are held.
    func insert(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) -> Outcome {
        let signature = r.bytes  // always 32 bytes
        func word(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(signature[offset + $1]) } }
        let key = Key(a: word(0), b: word(8), c: word(16), d: word(24))
        return state.withLock { state in
            Self.expire(&state, now: now)
            guard !state.members.contains(key) else { return .replayed }
            guard state.members.count < capacity else { return .full }
            state.members.insert(key)
            let bucket = until / Self.bucketSeconds
            state.buckets[bucket, default: []].append(key)
            state.oldest = min(state.oldest ?? bucket, bucket)
            return .accepted
        }
    }

    /// Forgets every bucket whose signatures all expired before `now`.
    func prune(now: UInt64) { state.withLock { Self.expire(&$0, now: now) } }

    /// Signatures currently remembered.
    var count: Int { state.withLock { $0.members.count } }

    private static func expire(_ state: inout State, now: UInt64) {
        // Bucket b holds expiries b·w … b·w + w − 1: all past when b < now / w.
        let current = now / bucketSeconds
        guard let oldest = state.oldest, oldest < current else { return }
        for bucket in state.buckets.keys where bucket < current {
            for key in state.buckets.removeValue(forKey: bucket) ?? [] { state.members.remove(key) }
        }
        state.oldest = state.buckets.keys.min()
    }
}
