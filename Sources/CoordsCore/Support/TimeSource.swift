import Synchronization

/// Where managers read the time (milliseconds since the Unix epoch). Injectable, so tests
/// control freshness, expiry and upload timestamps without sleeping.
public struct TimeSource: Sendable {
    /// The current time in milliseconds since the epoch.
    public let now: @Sendable () -> UInt64

    /// Creates a source from a closure.
    public init(_ now: @escaping @Sendable () -> UInt64) { self.now = now }

    /// The system wall clock.
    public static let system = TimeSource { wallClockMilliseconds() }

    /// A clock that moves only when told to (tests).
    public static func manual(_ clock: ManualClock) -> TimeSource { TimeSource { clock.milliseconds } }

    /// The current time in whole seconds.
    public var seconds: UInt64 { now() / 1000 }
}

/// A settable clock for tests.
public final class ManualClock: Sendable {
    private let value: Atomic<UInt64>

    /// Starts at `milliseconds` since the epoch.
    public init(milliseconds: UInt64) { value = Atomic(milliseconds) }

    /// The current reading.
    public var milliseconds: UInt64 { value.load(ordering: .acquiring) }

    /// Moves the clock forward.
    public func advance(byMilliseconds delta: UInt64) { value.add(delta, ordering: .acquiringAndReleasing) }

    /// Sets the clock.
    public func set(milliseconds: UInt64) { value.store(milliseconds, ordering: .releasing) }
}

/// The one rule for the timestamps the core signs (uploads, deletes, §7.3 mailbox signatures,
/// live proofs, stateless C exports): one past the last issued, at least now, at most
/// ``maximumLead`` ahead of now. Strictly increasing, so two requests in the same second do not
/// look like a replay; bounded, so a burst never runs past the relay's window.
public enum SignedTime {
    /// How far (seconds) a burst of requests may run ahead of the clock (well inside
    /// ``RelayAPI/signatureWindowSeconds``).
    public static let maximumLead: UInt64 = 120

    /// The next timestamp (Unix seconds) after `last` at `now` (Unix seconds). Saturating: a
    /// damaged stored `last` never traps.
    public static func next(after last: UInt64?, now: UInt64) -> UInt64 {
        min(max(now, (last ?? 0).addingSaturating(1)), now.addingSaturating(maximumLead))
    }
}

/// A ``SignedTime`` counter kept in memory, for signing without a store (the C ABI's stateless
/// exports keep one for the process): strictly increasing across calls from any thread.
public final class SignedClock: Sendable {
    private let last = Mutex<UInt64?>(nil)
    private let clock: TimeSource

    /// A counter reading `clock` (the system clock unless told).
    public init(clock: TimeSource = .system) { self.clock = clock }

    /// The next timestamp to sign with (Unix seconds), after every one this counter issued.
    public func next() -> UInt64 {
        last.withLock { last in
            let next = SignedTime.next(after: last, now: clock.seconds)
            last = next
            return next
        }
    }
}
