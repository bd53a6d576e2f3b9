import NIOCore
import NIOPosix

/// The CLI's one way to wait: a timer on NIO's event loop (an `epoll_wait` timeout), never
/// `Task.sleep`. On Linux, Swift concurrency's sleep arms libdispatch's timer, whose manager
/// thread then wakes every second for as long as the sleep lasts (measured with `strace -f -e
/// timerfd_settime` on an 8 s `Task.sleep`: nine re-arms, one a second; docs/PERFORMANCE.md,
/// "Battery"). An idle `coords watch` sleeps for minutes between the core's wakes, so that
/// was 3,600 wake-ups an hour the core never asked for.
enum Waiting {
    /// Waits `milliseconds` (at least 0) on NIO's event loop.
    /// - Throws: `CancellationError` when the task is cancelled meanwhile (at once if it already is).
    static func sleep(milliseconds: Int64) async throws {
        try Task.checkCancellation()
        let scheduled = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .milliseconds(max(milliseconds, 0))) {}
        do {
            try await withTaskCancellationHandler {
                try await scheduled.futureResult.get()
            } onCancel: {
                scheduled.cancel()
            }
        } catch EventLoopError.cancelled {
            throw CancellationError()
        }
    }

    /// Waits `seconds` (``sleep(milliseconds:)``).
    static func sleep(seconds: Int64) async throws {
        try await sleep(milliseconds: seconds.multipliedReportingOverflow(by: 1000).overflow ? .max : seconds * 1000)
    }
}
