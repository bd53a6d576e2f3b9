/// The one rule for how long an attachment transfer keeps trying (PROTOCOL.md §12.5), for uploads
/// and downloads alike, so no relay — slow, busy or dripping — can keep a host waiting for hours
/// and every host stops at the same point. Sans-IO: the host tells it what happened and the time;
/// it answers whether to go on, how long to wait, and when to give up.
///
/// The rule:
/// - an answer's body must bring at least ``minimumBytesPerWindow`` bytes in every
///   ``windowSeconds`` (else it is cut off as too slow, and counts as a failed try);
/// - a failed try (lost, cut off, too slow, busy) waits 1, 2, 4, 8, 16, then 30 s, or the relay's
///   `Retry-After`, which is cut to ``maximumWaitSeconds``;
/// - ``attempts`` failed tries in a row without a byte of progress end the transfer;
/// - the whole transfer ends at its deadline: ``baseSeconds`` plus a second per
///   ``slowestBytesPerSecond`` bytes (``limitSeconds(bytes:)``), whatever happened.
public struct TransferPace: Sendable, Equatable {
    /// Failed tries in a row (no byte gained) before the transfer gives up.
    public static let attempts = 14
    /// The longest wait one busy answer may impose, seconds: a `Retry-After` beyond it is cut.
    public static let maximumWaitSeconds: UInt64 = 60
    /// The window an answer's pace is judged over, seconds.
    public static let windowSeconds: UInt64 = 30
    /// Bytes an answer must bring in every window.
    public static let minimumBytesPerWindow: UInt64 = 16_384
    /// The deadline's fixed part, seconds.
    public static let baseSeconds: UInt64 = 600
    /// The slowest pace the deadline allows for, bytes per second.
    public static let slowestBytesPerSecond: UInt64 = 8_192

    /// What a host does after a failed try.
    public enum Next: Sendable, Equatable {
        /// Wait this many seconds, then try again.
        case wait(seconds: UInt64)
        /// Stop: the transfer failed; say why.
        case giveUp(reason: String)
    }

    /// When the transfer started (Unix ms).
    public let started: UInt64
    /// When it ends whatever happens (Unix ms).
    public let deadline: UInt64
    /// Failed tries in a row without progress so far.
    public private(set) var failures = 0
    private var windowStart: UInt64
    private var windowBytes: UInt64 = 0

    /// The pace of a transfer of `bytes` bytes starting at `now` (Unix ms).
    public init(bytes: UInt64, now: UInt64) {
        started = now
        deadline = now.addingSaturating(Self.limitSeconds(bytes: bytes).multipliedSaturating(by: 1000))
        windowStart = now
    }

    /// Seconds a transfer of `bytes` bytes may take in all: ``baseSeconds`` plus `bytes` at
    /// ``slowestBytesPerSecond``. A host prints it when a transfer starts.
    public static func limitSeconds(bytes: UInt64) -> UInt64 {
        baseSeconds.addingSaturating(bytes / slowestBytesPerSecond)
    }

    /// Seconds to wait after the `failures`-th failed try in a row: 1, 2, 4, 8, 16, then 30.
    public static func pause(afterFailures failures: Int) -> UInt64 {
        failures <= 1 ? 1 : min(30, UInt64(1) << UInt64(min(failures - 1, 5)))
    }

    /// Whether the deadline passed at `now`.
    public func expired(now: UInt64) -> Bool { now >= deadline }

    /// Seconds left until the deadline (at least 1): a host's timeout for the next request.
    public func secondsLeft(now: UInt64) -> UInt64 { max(1, deadline.subtractingSaturating(now) / 1000) }

    /// An answer's body starts at `now`: its pace is judged from here.
    public mutating func beginAnswer(now: UInt64) {
        windowStart = now
        windowBytes = 0
    }

    /// `count` bytes of an answer's body arrived at `now`. False when the answer is too slow
    /// (fewer than ``minimumBytesPerWindow`` in a window) or the deadline passed: cut it off and
    /// call ``failed(progressed:retryAfter:now:)``.
    public mutating func took(_ count: Int, now: UInt64) -> Bool {
        guard !expired(now: now) else { return false }
        windowBytes = windowBytes.addingSaturating(UInt64(clamping: count))
        guard now.subtractingSaturating(windowStart) >= Self.windowSeconds * 1000 else { return true }
        guard windowBytes >= Self.minimumBytesPerWindow else { return false }
        beginAnswer(now: now)
        return true
    }

    /// A try made progress (a part stored, a chunk opened): the count of failures starts again.
    public mutating func progressed() { failures = 0 }

    /// A try failed at `now` (lost, cut off, too slow, or a busy answer asking to wait
    /// `retryAfter` seconds). `progressed`: whether it still gained bytes before it failed.
    /// - Returns: how long to wait before the next try, or that the transfer gives up (after
    ///   ``attempts`` failures in a row, or when the wait would pass the deadline).
    public mutating func failed(progressed: Bool, retryAfter: UInt64? = nil, now: UInt64) -> Next {
        failures = progressed ? 1 : failures + 1
        guard failures < Self.attempts else {
            return .giveUp(reason: "\(Self.attempts) tries in a row brought nothing")
        }
        let seconds = retryAfter.map { min(max($0, 1), Self.maximumWaitSeconds) } ?? Self.pause(afterFailures: failures)
        guard now.addingSaturating(seconds.multipliedSaturating(by: 1000)) < deadline else {
            return .giveUp(reason: "its deadline of \(deadline.subtractingSaturating(started) / 60_000) min passed")
        }
        return .wait(seconds: seconds)
    }
}
