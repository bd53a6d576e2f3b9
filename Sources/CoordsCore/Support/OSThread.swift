#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An OS thread for blocking work that must stay off Swift's cooperative pool: a loop on a
/// blocking ``Receiver`` (the relay's LMDB committer, the C ABI's update callback). Start it, then
/// either ``join()`` it or ``detach()`` it, once. The core itself never starts one: only a host
/// that asks (the C ABI's update callback) or the relay does.
public struct OSThread: @unchecked Sendable {  // a pthread_t: an integer or pointer handle
    /// `pthread_create` refused (its status: `EAGAIN` at the thread limit, …).
    public struct StartError: Error, CustomStringConvertible, Sendable {
        /// The error number `pthread_create` returned.
        public let status: Int32
        public var description: String { "cannot start a thread: \(String(cString: strerror(status)))" }
    }

    /// Boxes the closure for `pthread_create`'s untyped argument.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// The thread, for `pthread_join`/`pthread_detach`.
    private let handle: pthread_t

    /// Starts `body` on a new joinable thread; `body` (and what it captures) is released when it
    /// returns.
    /// - Throws: ``StartError`` when the thread cannot be created.
    public static func start(_ body: @escaping @Sendable () -> Void) throws(StartError) -> OSThread {
        let box = Unmanaged.passRetained(Body(body))
        #if canImport(Darwin)
        var handle: pthread_t?
        #else
        var handle = pthread_t()
        #endif
        let status = pthread_create(
            &handle, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<Body>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            }, box.toOpaque())
        #if canImport(Darwin)
        guard status == 0, let handle else {
            box.release()
            throw StartError(status: status)
        }
        #else
        guard status == 0 else {
            box.release()
            throw StartError(status: status)
        }
        #endif
        return OSThread(handle: handle)
    }

    /// Whether the caller is this thread (joining it from itself would deadlock).
    public var isCurrent: Bool { pthread_equal(pthread_self(), handle) != 0 }

    /// Waits until the thread's body has returned.
    public func join() { pthread_join(handle, nil) }

    /// Lets the thread finish on its own; its resources are freed when it returns.
    public func detach() { pthread_detach(handle) }
}
