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
