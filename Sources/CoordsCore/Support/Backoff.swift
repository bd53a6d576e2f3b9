/// The one retry schedule of the core: 1 s, 2 s, 4 s … doubled per consecutive failure, capped at
/// 60 s, before jitter. The outbox's retries (``OutboxManager``), the live channel's reconnects
/// (``LiveSession``) and the CLI's `coords watch` rounds all follow it.
public enum Backoff {
    /// The first delay (ms).
    public static let initial: UInt64 = 1000
    /// The longest delay (ms).
    public static let maximum: UInt64 = 60_000

    /// The delay (ms) before retry number `attempts` (0 for none yet), without jitter. Any count,
    /// however large, gives at most ``maximum`` (no shift overflows).
    public static func delay(attempts: UInt32) -> UInt64 {
        guard attempts > 0 else { return 0 }
        return min(initial << UInt64(min(attempts - 1, 16)), maximum)
    }
}
