import Logging
import Synchronization

/// What every manager of one ``CoordsApp`` shares: the store, the keychain, the identity, the
/// clock and randomness. One per open data directory; never global.
final class AppContext: Sendable {
    let database: Database
    let keychain: any Keychain
    let identity: IdentityHolder
    let clock: TimeSource
    let random: any RandomSource
    let logger: Logger
    let backupParameters: Argon2id.Parameters
    let places: PlaceSource
    /// The upload state row, decoded once per change (every share and every wake read it).
    let uploadStates = UploadStateCache()
    /// The public halves of the own signed prekeys, read once per change (every share seals to
    /// the current one). No private key is kept: an erased prekey's secret goes with its row.
    let signedPrekeyPublics = StampedCache<[(publicKey: X25519PublicKey, replaced: Bool, expires: UInt64)]>()

    init(
        database: Database, keychain: any Keychain, identity: IdentityHolder, clock: TimeSource,
        random: any RandomSource, logger: Logger, backupParameters: Argon2id.Parameters, places: PlaceSource = .bundled
    ) {
        self.database = database
        self.keychain = keychain
        self.identity = identity
        self.clock = clock
        self.random = random
        self.logger = logger
        self.backupParameters = backupParameters
        self.places = places
    }

    /// Whether strict mode (§6) is on.
    func isStrictMode() throws -> Bool {
        try database.read { tx in try tx.open(Tables.settings).get(SettingKey.strictMode) } == true
    }
}

/// The loaded identity: signing key and its X25519 form (derived once).
struct Identity: Sendable {
    let signing: Ed25519SigningKey
    let x25519: X25519PrivateKey

    init(signing: Ed25519SigningKey) throws {
        self.signing = signing
        x25519 = try X25519PrivateKey(ed25519: signing)
    }

    var publicKey: Ed25519PublicKey { signing.publicKey }
    var id: String { signing.publicKey.base64URL }
}

/// The identity currently loaded from the keychain (nil before one is created or imported).
final class IdentityHolder: Sendable {
    /// The keychain entry holding the 32-byte seed.
    static let keychainName = "identity.ed25519.seed"
    /// The identity before the last rotation (PROTOCOL.md §9.1), kept until every friend has
    /// its rotation statement, then wiped.
    static let previousKeychainName = "identity.previous.ed25519.seed"
    private let current = Mutex<Identity?>(nil)

    /// The identity.
    /// - Throws: ``WalletManagerError/noIdentity``.
    func get() throws -> Identity {
        guard let identity = current.withLock({ $0 }) else { throw WalletManagerError.noIdentity }
        return identity
    }

    var isLoaded: Bool { current.withLock { $0 != nil } }

    func set(_ identity: Identity?) { current.withLock { $0 = identity } }
}

/// Deferred dispatch: collects a manager's reconcile messages while its write transaction runs
/// and sends them only after the commit succeeded. A full channel never blocks the manager:
/// the message is dropped with a warning and the state stays readable through the getters.
struct Reconciler<Message: ReconcileMessage>: Sendable {
    let sender: Sender<Message>
    /// The host's side: the manager's `updates`.
    let updates: Receiver<Message>
    let logger: Logger
    var manager: String { Message.manager }
    /// Messages dropped because the host did not drain `updates` (logged at 1, 10, 100, …, so a
    /// host that never reads them is told without a line per message).
    private let dropped = DropCount()
    /// The app's spine (nil for a reconciler on a bare channel, in tests): effect lists reach
    /// every manager's channel through it.
    private(set) var spine: UpdateSpine?

    /// The manager's side of `channel`.
    init(channel: ReconcileChannel<Message>, logger: Logger) {
        (sender, updates, self.logger) = (channel.sender, channel.receiver, logger)
    }

    /// A manager's reconciler on a new channel of `spine`, whose messages hosts receive as `wrap`
    /// makes them (``CoordsApp/nextUpdate(timeout:)``); the spine routes the updates `unwrap`
    /// recognises, from any effect list, here.
    init(
        _ spine: UpdateSpine, as wrap: @escaping @Sendable (Message) -> AppUpdate, from unwrap: @escaping @Sendable (AppUpdate) -> Message?,
        logger: Logger
    ) {
        self.init(channel: spine.channel(as: wrap), logger: logger)
        let reconciler = self  // without the spine: the spine's routes must not hold the spine
        self.spine = spine
        spine.route { update in
            guard let message = unwrap(update) else { return false }
            reconciler.send(message)
            return true
        }
    }

    /// Runs `body` in a write transaction with an effect list (``WriteEffects``): its updates (for any
    /// manager) and keys to wipe are applied after the commit, dropped when it throws, and start
    /// empty again when the body runs twice (the store grew).
    /// - Throws: what `body` throws, store errors; keychain errors from wiping (the commit stands).
    func write<R>(_ database: Database, keychain: any Keychain, effects body: (borrowing WriteTransaction, inout WriteEffects) throws -> R) throws -> R {
        let (result, effects) = try database.write { tx -> (R, WriteEffects) in
            var effects = WriteEffects()
            let result = try body(tx, &effects)
            return (result, effects)
        }
        apply(effects)
        for name in effects.wipe { try keychain.delete(name: name) }
        return result
    }

    /// Sends an effect list's updates through the spine (each to its manager's channel).
    func apply(_ effects: WriteEffects) {
        spine?.send(effects.updates)  // no spine (a bare channel, in tests): nobody to tell
    }

    /// Runs a dispatched action; a failure becomes an `errorOccurred` message instead of a throw.
    func reportingFailure(_ action: () throws -> Void) {
        do {
            try action()
        } catch {
            // An error from outside CoordsCore is an internal error (199), never 0 (success at the C ABI).
            send(.errorOccurred(code: error.coordsCode, message: "\(error)"))
        }
    }

    /// Reports the failure of a dispatched action that awaits (see ``reportingFailure(_:)``).
    func report(_ error: any Error) {
        send(.errorOccurred(code: error.coordsCode, message: "\(error)"))
    }

    /// Runs `body` in a write transaction; its messages go out after the commit (none if it throws).
    /// `body` may run more than once when the store grows; messages of an aborted attempt are discarded.
    func write<R>(_ database: Database, _ body: (borrowing WriteTransaction, inout [Message]) throws -> R) throws -> R {
        let (result, messages) = try database.write { tx -> (R, [Message]) in
            var messages: [Message] = []
            let result = try body(tx, &messages)
            return (result, messages)
        }
        for message in messages { send(message) }
        return result
    }

    /// Sends one message now (no transaction involved).
    func send(_ message: Message) {
        do {
            try sender.trySend(message)
        } catch {
            switch error {
            case .full:
                let count = dropped.increment()
                if count.isPowerOfTen {
                    logger.warning(
                        "reconcile channel full: dropped messages (drain the manager's updates, or nextUpdate)",
                        metadata: ["manager": "\(manager)", "dropped": "\(count)"])
                }
            case .disconnected: logger.debug("nobody listens for reconcile messages", metadata: ["manager": "\(manager)"])
            }
        }
    }
}

/// A shared count of dropped reconcile messages.
final class DropCount: Sendable {
    private let value = Atomic<UInt64>(0)

    /// Adds one; returns the new count.
    func increment() -> UInt64 { value.add(1, ordering: .relaxed).newValue }
}

extension UInt64 {
    /// 1, 10, 100, … (the counts at which a repeated warning is logged again).
    var isPowerOfTen: Bool {
        var n = self
        while n >= 10, n % 10 == 0 { n /= 10 }
        return n == 1
    }
}

/// The upload state row (``Tables/uploadState``) decoded once per change: a decoded copy kept with
/// the table's change stamp it belongs to. A stamp names one committed content (every write
/// transaction that changes the table advances it, an abort takes it back), so a copy is used
/// only for the stamp it was read or written at, by any transaction of any process.
final class UploadStateCache: Sendable {
    private let kept = Mutex<(stamp: UInt64, state: UploadState)?>(nil)

    /// The row as committed, from the copy when the stamp matches (a row absent reads as a fresh state).
    /// - Throws: store errors, ``StoreError/decodingFailed(table:type:reason:)`` for a damaged row.
    func read(_ tx: borrowing ReadTransaction) throws -> UploadState {
        let stamp = try tx.changeStamp(of: Tables.uploadState)
        if let copy = kept.withLock({ $0 }), copy.stamp == stamp { return copy.state }
        let state = try tx.open(Tables.uploadState).get(UploadState.key) ?? UploadState()
        committed(state, stamp: stamp)
        return state
    }

    /// The row as `tx` sees it; the copy is used when `tx` has not changed the table yet, and
    /// never replaced from here (the transaction may still abort).
    /// - Throws: as ``read(_:)-(ReadTransaction)``.
    func read(_ tx: borrowing WriteTransaction) throws -> UploadState {
        let stamp = try tx.changeStamp(of: Tables.uploadState)
        if let copy = kept.withLock({ $0 }), copy.stamp == stamp { return copy.state }
        return try tx.open(Tables.uploadState).get(UploadState.key) ?? UploadState()
    }

    /// Writes `state` in `tx`; returns the stamp it will have once committed (hand both to
    /// ``committed(_:stamp:)`` after the commit).
    /// - Throws: store errors.
    func write(_ state: UploadState, _ tx: borrowing WriteTransaction) throws -> UInt64 {
        try tx.open(Tables.uploadState).put(UploadState.key, state)
        return try tx.changeStamp(of: Tables.uploadState)
    }

    /// `state` was committed at `stamp`.
    func committed(_ state: UploadState, stamp: UInt64) {
        kept.withLock { copy in
            if copy.map({ $0.stamp < stamp }) ?? true { copy = (stamp, state) }
        }
    }
}

/// A value derived from one table, kept with the table's change stamp it was read at (the table
/// must be stamped): reused while the stamp is the same, read again when it moved.
final class StampedCache<Value: Sendable>: Sendable {
    private let kept = Mutex<(stamp: UInt64, value: Value)?>(nil)

    /// The value at `stamp`: the copy when it was read at that stamp, else `read()` (kept
    /// unless a copy from a later stamp is there already).
    /// - Throws: what `read` throws.
    func value(at stamp: UInt64, _ read: () throws -> Value) rethrows -> Value {
        if let copy = kept.withLock({ $0 }), copy.stamp == stamp { return copy.value }
        let value = try read()
        kept.withLock { copy in
            if copy.map({ $0.stamp <= stamp }) ?? true { copy = (stamp, value) }
        }
        return value
    }
}
