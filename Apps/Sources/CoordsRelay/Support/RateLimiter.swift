import Synchronization

/// Token buckets by name (client address or key): `rate` tokens per second up to `burst`.
/// A rate of 0 disables the limiter. Idle buckets are pruned so memory stays bounded.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var last: UInt64  // ms
    }

    /// Tokens per second (0: the limiter is off).
    public let rate: Double
    /// The most tokens a bucket holds.
    public let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Buckets kept at most; beyond it, full (idle) buckets are dropped.
    static let maximumBuckets = 100_000
    /// The longest `Retry-After` (seconds) it answers, whatever the rate.
    static let longestWait = 86_400

    /// A limiter of `rate` tokens per second (negative: 0, off) and buckets of `burst` (at least 1).
    public init(rate: Double, burst: Double) {
        self.rate = max(rate, 0)
        self.burst = max(burst, 1)
    }

    /// Takes one token for `name` at `now` (ms). Returns nil when allowed, or the whole seconds
    /// after which a token will be available.
    public func take(_ name: String, now: UInt64) -> Int? {
        guard rate > 0 else { return nil }
        return buckets.withLock { buckets in
            var bucket = buckets[name] ?? Bucket(tokens: burst, last: now)
            let elapsed = Double(now &- min(bucket.last, now)) / 1000
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.last = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[name] = bucket
                if buckets.count > Self.maximumBuckets { Self.prune(&buckets, now: now, rate: rate, burst: burst) }
                return nil
            }
            buckets[name] = bucket
            // Compared on the safe side: a tiny rate (or a NaN) waits a day instead of trapping.
            let wait = ((1 - bucket.tokens) / rate).rounded(.up)
            return wait < Double(Self.longestWait) ? max(1, Int(wait)) : Self.longestWait
        }
    }

    /// Whether ``take(_:now:)`` would allow `name` at `now`, without taking a token (for limits
    /// charged only when something is handed out).
    func available(_ name: String, now: UInt64) -> Bool {
        guard rate > 0 else { return true }
        return buckets.withLock { buckets in
            guard let bucket = buckets[name] else { return true }
            let elapsed = Double(now &- min(bucket.last, now)) / 1000
            return min(burst, bucket.tokens + elapsed * rate) >= 1
        }
    }

    /// Drops buckets that have refilled completely (they behave like new ones).
    public func prune(now: UInt64) {
        buckets.withLock { Self.prune(&$0, now: now, rate: rate, burst: burst) }
    }

    var count: Int { buckets.withLock { $0.count } }

    private static func prune(_ buckets: inout [String: Bucket], now: UInt64, rate: Double, burst: Double) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + Double(now &- min(bucket.last, now)) / 1000 * rate < burst
        }
    }
}
