// What the concurrency suites share (also compiled alone with them: COORDS_PACKAGE=channel in Package.swift).
import Foundation
import Testing

/// The time limit of the channel and live suites, so a deadlock fails the test that hangs, by
/// name, instead of hanging the run: 2 minutes (a loaded 2-core CI machine runs them in under 20 s),
/// or `COORDS_TEST_TIME_LIMIT_MINUTES` (`make test-tsan` raises it: ThreadSanitizer is many times slower).
enum TestTimeLimit {
    static var minutes: TimeLimitTrait.Duration {
        let configured = ProcessInfo.processInfo.environment["COORDS_TEST_TIME_LIMIT_MINUTES"].flatMap { Int($0) }
        return .minutes(max(1, configured ?? 2))
    }
}

/// A value set once from another thread.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    private var wasSet = false
    init(_ value: T) { stored = value }
    func set(_ value: T) {
        lock.lock()
        stored = value
        wasSet = true
        lock.unlock()
    }
    func update(_ body: (inout T) -> Void) {
        lock.lock()
        body(&stored)
        lock.unlock()
    }
    var value: T {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return wasSet
    }
}
