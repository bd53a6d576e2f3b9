import CPlatform

/// An OS thread for blocking work that must stay off Swift's cooperative pool: a loop on a
/// blocking ``Receiver`` (the relay's LMDB committer, the C ABI's update callback). Start it, then
/// either ``join()`` it or ``detach()`` it, once. The core itself never starts one: only a host
/// that asks (the C ABI's update callback) or the relay does.
public struct OSThread: @unchecked Sendable {  // a thread handle: an integer or pointer
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

    /// The thread (CPlatform's handle: `pthread_t` differs in kind between Linux and Apple).
    private let handle: coords_thread

    /// Starts `body` on a new joinable thread; `body` (and what it captures) is released when it
    /// returns.
    /// - Throws: ``StartError`` when the thread cannot be created.
    public static func start(_ body: @escaping @Sendable () -> Void) throws(StartError) -> OSThread {
        let box = Unmanaged.passRetained(Body(body))
        var handle = coords_thread()
        let status = coords_thread_start(
            &handle,
            { argument in
                guard let argument else { return }
                Unmanaged<Body>.fromOpaque(argument).takeRetainedValue().run()
            }, box.toOpaque())
        guard status == 0 else {
            box.release()
            throw StartError(status: status)
        }
        return OSThread(handle: handle)
    }

    /// Whether the caller is this thread (joining it from itself would deadlock).
    public var isCurrent: Bool { coords_thread_is_current(handle) != 0 }

    /// Waits until the thread's body has returned.
    public func join() { coords_thread_join(handle) }

    /// Lets the thread finish on its own; its resources are freed when it returns.
    public func detach() { coords_thread_detach(handle) }
}
