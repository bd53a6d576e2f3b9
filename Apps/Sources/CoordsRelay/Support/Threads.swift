#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Boxes a closure for `pthread_create`.
private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a detached OS thread running `body` (for blocking work that must stay off Swift's
/// cooperative pool, such as LMDB write transactions).
/// - Throws: ``RelayStoreError`` when the thread cannot be created.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws {
    let box = Unmanaged.passRetained(ThreadBody(body))
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { argument in
            guard let argument else { return nil }
            Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, box.toOpaque())
    guard status == 0 else {
        box.release()
        throw RelayStoreError(description: "cannot start thread \(name): error \(status)")
    }
    pthread_detach(thread)
}
