// The two places where the library calls into the host: keychain callbacks and the update
// callback thread. Both only marshal; the logic stays in CoordsCore.
import CCoordsABI
import CPlatform
import CoordsCore
import Synchronization

/// A ``Keychain`` backed by the host's C callbacks.
final class HostKeychain: Keychain, @unchecked Sendable {
    /// Secrets larger than this are refused (the identity seed is 32 bytes).
    static let capacity = 4096
    private let table: CoordsKeychainCallbacks

    init(_ table: CoordsKeychainCallbacks) throws {
        guard table.save != nil, table.load != nil, table.remove != nil else {
            throw FFIError.null("keychain->save, keychain->load and keychain->remove")
        }
        self.table = table
    }

    func save(_ secret: SecretBytes, name: String) throws {
        guard let save = table.save else { throw KeychainError.hostFailure(code: -1, message: "no save callback") }
        let status = name.withCString { n in
            secret.withUnsafeBytes { s in save(table.context, n, s.baseAddress?.assumingMemoryBound(to: UInt8.self), s.count) }
        }
        guard status == 0 else { throw KeychainError.hostFailure(code: status, message: "save(\"\(name)\") failed") }
    }

    func load(name: String) throws -> SecretBytes? {
        guard let load = table.load else { throw KeychainError.hostFailure(code: -1, message: "no load callback") }
        var length = 0
        var status: Int32 = 0
        let scratch = SecretBytes(count: Self.capacity) { buffer in
            status = name.withCString { n in
                load(table.context, n, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count, &length)
            }
        }
        switch status {
        case 0:
            guard length >= 0, length <= Self.capacity else {
                throw KeychainError.hostFailure(code: status, message: "load(\"\(name)\") reported \(length) bytes, more than it was given")
            }
            return try scratch.slice(0..<length)
        case 1: return nil
        default: throw KeychainError.hostFailure(code: status, message: "load(\"\(name)\") failed")
        }
    }

    func delete(name: String) throws {
        guard let remove = table.remove else { throw KeychainError.hostFailure(code: -1, message: "no remove callback") }
        let status = name.withCString { remove(table.context, $0) }
        guard status == 0 else { throw KeychainError.hostFailure(code: status, message: "remove(\"\(name)\") failed") }
    }
}

/// Delivers an app's updates to a C callback from a dedicated thread.
final class CallbackRunner: @unchecked Sendable {
    private let app: CoordsCore.CoordsApp
    private let callback: CoordsUpdateCallback
    private let context: UnsafeMutableRawPointer?
    private let stopping = Atomic<Bool>(false)
    /// Set while `start` holds the lock, so a callback that stops the runner at once finds it.
    private let thread = Mutex<OSThread?>(nil)

    init(app: CoordsCore.CoordsApp, callback: @escaping CoordsUpdateCallback, context: UnsafeMutableRawPointer?) {
        self.app = app
        self.callback = callback
        self.context = context
    }

    /// Starts the delivery thread; it holds this runner until it returns.
    /// - Throws: ``FFIError`` (`COORDS_ERR_INTERNAL`) when the thread cannot be created.
    func start() throws {
        do {
            try thread.withLock { $0 = try OSThread.start { [self] in run() } }
        } catch {
            throw FFIError(code: COORDS_ERR_INTERNAL, message: "could not start the update thread (\(error))")
        }
    }

    private func run() {
        while !stopping.load(ordering: .acquiring) {
            switch app.nextUpdate(timeout: .milliseconds(100)) {
            case .update(let update):
                let json = Record.update(update).serialized()
                json.withUnsafeBufferPointer { callback(context, $0.baseAddress, $0.count) }
            case .timedOut: continue
            case .closed: return
            }
        }
    }

    /// Asks the thread to stop and waits for it, unless called from the callback itself. Once:
    /// a second call finds no thread (joining or detaching twice is undefined).
    func stop() {
        stopping.store(true, ordering: .releasing)
        guard let thread = thread.withLock({ slot in slot.take() }) else { return }
        if thread.isCurrent { thread.detach() } else { thread.join() }
    }
}
