import CPlatform
import Synchronization

/// A `pthread_mutex_t` that can be held across a closure (Swift's `Mutex` only lends itself to
/// one) and waited on with ``Condition``.
final class PthreadMutex: @unchecked Sendable {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the mutex held.
    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A `pthread_cond_t` on the monotonic clock (deadlines are immune to wall-clock jumps).
final class Condition: @unchecked Sendable {
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    /// Waits (the caller holds `mutex`) until signalled or, when given, until `deadline`
    /// (nanoseconds on the monotonic clock). Returns false when the deadline passed.
    @discardableResult
    func wait(_ mutex: PthreadMutex, until deadline: UInt64? = nil) -> Bool {
        guard let deadline else {
            pthread_cond_wait(cond, mutex.mutex)
            return true
        }
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex.mutex, &ts) != ETIMEDOUT
    }

    func signal() { pthread_cond_signal(cond) }
    func broadcast() { pthread_cond_broadcast(cond) }
}

/// A `pthread_rwlock_t`: transactions hold it shared, map resizing holds it exclusively.
final class ReadWriteLock: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(lock, nil) }
    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }
    func lockShared() { pthread_rwlock_rdlock(lock) }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}

/// Monotonic time in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The monotonic deadline `duration` from now (saturating; negative durations are "now").
func monotonicDeadline(after duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return monotonicNanoseconds() }
    let nanos = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let total = nanos.partialValue.addingReportingOverflow(UInt64(max(attoseconds, 0) / 1_000_000_000))
    let span = nanos.overflow || total.overflow ? UInt64.max : total.partialValue
    let (deadline, overflow) = monotonicNanoseconds().addingReportingOverflow(span)
    return overflow ? UInt64.max : deadline
}

/// Wall-clock time in milliseconds since the Unix epoch.
func wallClockMilliseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(max(ts.tv_sec, 0)) &* 1000 &+ UInt64(ts.tv_nsec / 1_000_000)
}
