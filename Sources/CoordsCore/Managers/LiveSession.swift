import Synchronization

/// The client side of the live channel (PROTOCOL.md §8), without I/O: the core says which relays
/// to connect to, what to send once a connection is open, what an incoming frame means, and
/// when to reconnect; the host owns the WebSockets.
///
/// ```swift
/// let live = app.live
/// for connection in try live.connections() {            // one per relay
///     // open a WebSocket to connection.url; once open:
///     let opened = try live.opened(server: connection.server)
///     // send opened.frames as text frames, then perform opened.catchUp (ordinary fetches)
///     // and opened.mailboxFetch; for each incoming text frame:
///     let event = try await live.process(server: connection.server, frame: bytes)
///     // when the socket closes or fails to open:
///     switch live.closed(server: connection.server, code: closeCode, upgradeStatus: status) { … }
///     // when the host closes it itself (background, stop):
///     live.stopped(server: connection.server)
/// }
/// ```
/// While a relay's connection is confirmed (its `subscribed` frame arrived), the one wake
/// (``CoordsApp/due(now:only:ignoringBackoff:)``) leaves the friends watched there, and the
/// mailbox, out of its periodic fetches: the connection tells of every change, and reopening it
/// catches up. ``CoordsApp/fetchNow()`` still fetches everything.
/// Notices go through the same verification, rollback refusal and cache as a fetch, and the
/// location manager sends its reconcile messages (``LocationManagerReconcileMessage/locationsUpdated(_:)``)
/// exactly as for a fetch.
public final class LiveSession: Sendable {
    /// One relay to hold a live connection to.
    public struct Connection: Sendable, Equatable {
        /// The exact server string the friends were grouped under.
        public var server: String
        /// `ws://` or `wss://` URL of the relay's live endpoint.
        public var url: String
        /// The keys to watch there (friends we fetch from on this relay).
        public var ids: [String]
        /// Whether this is the user's own relay, which also carries the mailbox.
        public var mailbox: Bool
    }

    /// What to do right after a connection opened.
    public struct Opened: Sendable, Equatable {
        /// Text frames to send, in order: subscribes of at most 50 ids, the first with a fresh
        /// mailbox proof on the user's own relay.
        public var frames: [String]
        /// One catch-up fetch of this relay's friends (perform them like ordinary fetches and
        /// hand the answers to ``LocationManager/processFetchResponse(_:)``).
        public var catchUp: [RelayAPI.PreparedFetch]
        /// On the user's own relay, a signed mailbox fetch (handle it like ``MessagesManager/prepareFetch()``'s).
        public var mailboxFetch: PreparedRequest?
    }

    /// What an incoming frame meant.
    public enum Event: Sendable, Equatable {
        /// The relay confirmed the subscriptions: how many keys it watches for this connection,
        /// and whether it watches the mailbox. The reconnect backoff starts again from 1 s.
        case subscribed(ids: Int, mailbox: Bool)
        /// A position notice was processed as a one-entry fetch answer.
        case locations(FetchOutcome)
        /// A watched friend deleted their position (the signature verified); the cached one stays.
        case deleted(id: String)
        /// A notice the client refused: a delete whose signature does not verify.
        case rejected(FetchRejection)
        /// An envelope is waiting in the mailbox: perform `fetch` (a fresh signed mailbox fetch),
        /// process it with ``MessagesManager/processFetchResponse(_:)``, then call
        /// ``LiveSession/mailboxFetched(server:)``, which says whether to fetch once more.
        case messageWaiting(id: String, fetch: PreparedRequest)
        /// A watched friend uploaded a position too large for a notice (§8.3 `changed`): perform
        /// `fetch` (an ordinary fetch of that one friend) and hand the answer to
        /// ``LocationManager/processFetchResponse(_:)``.
        case changed(id: String, fetch: RelayAPI.PreparedFetch)
        /// A notice for a key or mailbox this connection did not subscribe, or a message notice
        /// that arrived while the fetch of an earlier one was still out (the burst's one more
        /// fetch comes from ``LiveSession/mailboxFetched(server:)``): nothing to do.
        case ignored(id: String)
    }

    /// What to do after a connection closed or could not be opened.
    public enum Next: Sendable, Equatable {
        /// Open it again after this many milliseconds (backoff with jitter, §8.5).
        case reconnect(afterMilliseconds: UInt64)
        /// The relay has no live channel (404): poll it as before (§4).
        case poll
    }

    /// The first reconnect delay (``Backoff/initial``).
    public static var initialBackoff: UInt64 { Backoff.initial }
    /// The longest reconnect delay (``Backoff/maximum``).
    public static var maximumBackoff: UInt64 { Backoff.maximum }
    /// How long (ms) a mailbox fetch handed out by ``Event/messageWaiting(id:fetch:)`` counts as
    /// running when the host never reports it with ``mailboxFetched(server:)``.
    public static let mailboxFetchTimeout: UInt64 = 60_000
    /// The least time (ms) from the start of one mailbox fetch of a burst to the start of the next
    /// (§8.5): a relay flooding notices costs at most one fetch a second. The host waits out what
    /// is left of it before performing the fetch ``mailboxFetched(server:)`` returns.
    public static let burstFetchGap: UInt64 = 1_000

    let location: LocationManager
    let messages: MessagesManager
    let context: AppContext
    private let servers = Mutex<[String: ServerState]>([:])
    /// Counts every change of which relays confirmed their subscriptions (``coverage()``).
    private let coverageChanges = Atomic<UInt64>(0)

    /// What the open live connections watch right now: per relay whose subscriptions the relay
    /// confirmed, the friends' keys subscribed there, and whether the mailbox is watched. The
    /// one wake leaves these out of its periodic fetches (the connection tells of every change,
    /// and reconnecting fetches what was missed), until ``generation`` moves.
    struct Coverage: Sendable {
        /// Moves whenever a connection opens or closes.
        var generation: UInt64
        /// Relay (exact server string) → keys watched there.
        var ids: [String: Set<String>]
        /// Whether the user's own relay watches the mailbox.
        var mailbox: Bool

        /// Whether `target`'s position arrives over a confirmed live connection.
        func watches(_ target: RelayAPI.FetchTarget) -> Bool { ids[target.server]?.contains(target.id) == true }
    }

    /// What the live connections watch now (``Coverage``).
    func coverage() -> Coverage {
        servers.withLock { state in
            var coverage = Coverage(generation: coverageChanges.load(ordering: .acquiring), ids: [:], mailbox: false)
            for (server, entry) in state where entry.confirmed {
                coverage.ids[server] = entry.subscribed
                coverage.mailbox = coverage.mailbox || entry.mailbox
            }
            return coverage
        }
    }

    /// The current ``Coverage/generation``.
    var coverageGeneration: UInt64 { coverageChanges.load(ordering: .acquiring) }

    /// What the session remembers per relay.
    private struct ServerState {
        var subscribed = Set<String>()
        var mailbox = false
        /// The relay confirmed the subscriptions of the connection now open (§8.2 `subscribed`).
        var confirmed = false
        var failures = 0
        var polling = false
        /// When (ms) the mailbox fetch now running was handed out; nil when none is.
        var mailboxFetchSince: UInt64?
        /// A message notice arrived while that fetch was running.
        var mailboxNoticedAgain = false
    }

    init(context: AppContext, location: LocationManager, messages: MessagesManager) {
        (self.context, self.location, self.messages) = (context, location, messages)
    }

    // MARK: Planning

    /// The relays to connect to: friends we fetch from, grouped by their exact server string (as
    /// fetches are), plus the user's own relay for the mailbox. Relays that answered 404 are left
    /// out (they are polled).
    /// - Throws: ``WalletManagerError/noIdentity``, ``WireError/invalidServerURL(_:)``, store errors.
    public func connections() throws -> [Connection] {
        _ = try context.identity.get()
        let (targets, own) = try context.database.read { tx in
            (try FriendsManager.fetchTargets(in: tx), try tx.open(Tables.settings).get(SettingKey.server) ?? "")
        }
        var order: [String] = []
        var ids: [String: [String]] = [:]
        if !own.isEmpty {
            order.append(own)
            ids[own] = []
        }
        var seen = Set<RelayAPI.FetchTarget>()
        for target in targets where seen.insert(target).inserted {
            if ids[target.server] == nil { order.append(target.server) }
            ids[target.server, default: []].append(target.id)
        }
        let polling = servers.withLock { state in Set(state.filter { $0.value.polling }.keys) }
        return try order.filter { !polling.contains($0) }.map { server in
            Connection(server: server, url: try Self.url(server: server), ids: ids[server] ?? [], mailbox: server == own)
        }
    }

    /// The live endpoint of `server`: `https` becomes `wss`, `http` becomes `ws`.
    /// - Throws: ``WireError/invalidServerURL(_:)``.
    public static func url(server: String) throws -> String {
        guard let url = ServerURL(server) else { throw WireError.invalidServerURL(server) }
        return (url.isSecure ? "wss://" : "ws://") + url.rest + LiveFrame.path
    }

    // MARK: Connection events

    /// A connection to `server` opened: the subscribe frames to send (a fresh mailbox proof on
    /// the user's own relay) and the catch-up fetches to perform after them (§8.5).
    /// - Throws: ``WalletManagerError/noIdentity``, ``WireError/invalidServerURL(_:)``, store errors.
    public func opened(server: String) throws -> Opened {
        let identity = try context.identity.get()
        guard let connection = try connections().first(where: { $0.server == server }) else {
            servers.withLock { state in
                state[server, default: ServerState()].subscribed = []
                state[server, default: ServerState()].confirmed = false
                coverageChanges.add(1, ordering: .acquiringAndReleasing)
            }
            return Opened(frames: [], catchUp: [], mailboxFetch: nil)
        }
        var frames: [String] = []
        var proof: LiveFrame.MailboxProof?
        if connection.mailbox {
            proof = LiveFrame.MailboxProof(signer: identity.signing, timestamp: try messages.nextSignedTimestamp())
        }
        var start = 0
        repeat {
            let batch = Array(connection.ids[start..<min(start + LiveFrame.maximumIDsPerFrame, connection.ids.count)])
            frames.append(LiveFrame.subscribe(ids: batch, mailbox: start == 0 ? proof : nil).text)
            start += LiveFrame.maximumIDsPerFrame
        } while start < connection.ids.count
        servers.withLock { state in
            state[server, default: ServerState()].subscribed = Set(connection.ids)
            state[server, default: ServerState()].mailbox = connection.mailbox
            state[server, default: ServerState()].confirmed = false
            coverageChanges.add(1, ordering: .acquiringAndReleasing)
        }
        let targets = connection.ids.map { RelayAPI.FetchTarget(id: $0, server: server) }
        return Opened(
            frames: frames, catchUp: try RelayAPI.prepareFetches(targets),
            mailboxFetch: connection.mailbox ? try messages.prepareFetch() : nil)
    }

    /// Processes one text frame received from `server`.
    /// - Throws: ``WireError/invalidJSON(_:)`` / ``WireError/unexpectedJSON(_:)`` and the
    ///   other ``LiveFrame/init(parsing:)`` errors for a malformed frame (the host may close the
    ///   connection with 4400 and reconnect); ``WalletManagerError/noIdentity``; store errors.
    public func process(server: String, frame bytes: [UInt8]) async throws -> Event {
        let frame = try LiveFrame(parsing: bytes)
        let state = servers.withLock { $0[server] } ?? ServerState()
        switch frame {
        case .subscribed(let ids, let mailbox):
            servers.withLock { state in
                state[server, default: ServerState()].failures = 0
                // Only a connection this session opened is confirmed (a stray frame after a close is not).
                if var entry = state[server], !entry.subscribed.isEmpty || entry.mailbox {
                    entry.confirmed = true
                    entry.mailbox = entry.mailbox && mailbox
                    state[server] = entry
                    coverageChanges.add(1, ordering: .acquiringAndReleasing)
                }
            }
            return .subscribed(ids: ids, mailbox: mailbox)
        case .location(let notice):
            guard state.subscribed.contains(notice.id) else { return .ignored(id: notice.id) }
            let identity = try context.identity.get()
            let entry = RelayAPI.processEntry(
                id: notice.id, value: notice.fetchEntry, readers: try location.readerKeys(identity),
                options: .init(requireSignatures: try context.isStrictMode()))
            return .locations(try await location.process([entry]))
        case .deleted(let id, let timestamp, let signature):
            guard state.subscribed.contains(id) else { return .ignored(id: id) }
            // A notice for an id that is not a key is refused below, like a bad signature.
            guard let key = try? Ed25519PublicKey(base64URL: id),
                key.isValidSignature(signature, for: RelayAPI.deleteSignedMessage(timestamp: timestamp))
            else {
                return .rejected(FetchRejection(id: id, error: .tamperedEntry(id: id)))
            }
            return .deleted(id: id)
        case .message(let id):
            guard state.mailbox else { return .ignored(id: id) }
            // One signed fetch per burst (§8.5): a notice while one is out only asks for one more.
            let now = context.clock.now()
            let running = servers.withLock { state -> Bool in
                if let since = state[server]?.mailboxFetchSince, now >= since, now - since < Self.mailboxFetchTimeout {
                    state[server]?.mailboxNoticedAgain = true
                    return true
                }
                state[server, default: ServerState()].mailboxFetchSince = now
                state[server, default: ServerState()].mailboxNoticedAgain = false
                return false
            }
            if running { return .ignored(id: id) }
            return .messageWaiting(id: id, fetch: try messages.prepareFetch())
        case .changed(let id):
            guard state.subscribed.contains(id) else { return .ignored(id: id) }
            guard let fetch = try RelayAPI.prepareFetches([RelayAPI.FetchTarget(id: id, server: server)]).first else { return .ignored(id: id) }
            return .changed(id: id, fetch: fetch)
        case .subscribe, .unsubscribe:
            throw WireError.unexpectedJSON("a relay does not send \"subscribe\" frames")
        }
    }

    /// The host performed (or gave up on) the mailbox fetch of an ``Event/messageWaiting(id:fetch:)``
    /// from `server`. However many message notices arrived meanwhile, they are covered by one
    /// more fetch.
    /// - Returns: a fresh signed mailbox fetch when notices arrived while the last one ran
    ///   (perform it no sooner than ``burstFetchGap`` after the previous one began, process the
    ///   answer, and call this again), nil when the burst is done.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store errors.
    public func mailboxFetched(server: String) throws -> PreparedRequest? {
        let now = context.clock.now()
        let again = servers.withLock { state -> Bool in
            guard state[server]?.mailboxFetchSince != nil else { return false }
            let again = state[server]?.mailboxNoticedAgain ?? false
            state[server]?.mailboxFetchSince = again ? now : nil
            state[server]?.mailboxNoticedAgain = false
            return again
        }
        guard again else { return nil }
        do {
            return try messages.prepareFetch()
        } catch {
            servers.withLock { $0[server]?.mailboxFetchSince = nil }
            throw error
        }
    }

    /// The host closed its connection to `server` itself (the app went to the background, the
    /// user stopped watching): that relay's friends and the mailbox are fetched by the one wake
    /// again, so ``CoordsApp/nextWake(now:)`` may move earlier. The reconnect backoff is left as
    /// it was. Calling it for a relay with no connection does nothing.
    public func stopped(server: String) {
        servers.withLock { state in
            guard state[server] != nil else { return }
            state[server]?.confirmed = false
            state[server]?.subscribed = []
            state[server]?.mailbox = false
            state[server]?.mailboxFetchSince = nil
            state[server]?.mailboxNoticedAgain = false
            coverageChanges.add(1, ordering: .acquiringAndReleasing)
        }
    }

    /// The connection to `server` closed with WebSocket `code` (whatever the relay sent, or nil
    /// when the connection dropped without a close frame), or could not be opened
    /// (`upgradeStatus`: the HTTP status the upgrade request got, if any). Call it only for closes
    /// the host did not ask for: a host that closes a connection itself calls ``stopped(server:)``.
    /// - Returns: ``Next/poll`` for a 404 (the relay has no live channel; it is then left out of
    ///   ``connections()``), otherwise a reconnect delay: 1 s doubled per consecutive failure up
    ///   to 60 s, drawn between half and all of it.
    public func closed(server: String, code: Int?, upgradeStatus: Int?) -> Next {
        if upgradeStatus == 404 {
            servers.withLock { state in
                state[server, default: ServerState()].polling = true
                state[server, default: ServerState()].confirmed = false
                coverageChanges.add(1, ordering: .acquiringAndReleasing)
            }
            return .poll
        }
        let failures = servers.withLock { state in
            state[server, default: ServerState()].confirmed = false
            coverageChanges.add(1, ordering: .acquiringAndReleasing)
            state[server, default: ServerState()].subscribed = []
            state[server, default: ServerState()].mailbox = false
            state[server, default: ServerState()].mailboxFetchSince = nil
            state[server, default: ServerState()].mailboxNoticedAgain = false
            state[server, default: ServerState()].failures = state[server, default: ServerState()].failures.addingSaturating(1)
            return state[server, default: ServerState()].failures
        }
        let delay = Backoff.delay(attempts: UInt32(clamping: failures))
        // Jitter only spreads reconnects: without random bytes (never expected) the delay is half the ceiling.
        let jitter = (try? context.random.bytes(8)).map { bytes in bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } } ?? 0
        return .reconnect(afterMilliseconds: delay / 2 + jitter % (delay / 2 + 1))
    }
}
