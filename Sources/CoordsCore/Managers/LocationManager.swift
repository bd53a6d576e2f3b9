/// Why a host wants to upload; decides whether a recent fix may be reused.
public enum UploadReason: String, Sendable, Codable {
    /// The user asked (share now): needs a fresh fix.
    case explicit
    /// App launch: a fix younger than 5 minutes may be reused.
    case launch
    /// A background refresh: a fix younger than 5 minutes may be reused.
    case background
}

/// An upload ready to send.
public struct PreparedUpload: Sendable, Equatable {
    /// `PUT <server>/api/location`.
    public var request: PreparedRequest
    /// The fix's timestamp (ms); pass it to ``LocationManager/markUploadSucceeded(fixTimestamp:)``.
    public var fixTimestamp: UInt64
    /// The upload time signed into the request (Unix seconds).
    public var uploadTimestamp: UInt64
    /// Real recipients, the sender included.
    public var recipientCount: Int
    /// Size of the sealed blob.
    public var blobByteCount: Int
}

/// A friend's position as the host shows it.
public struct FriendLocation: Sendable, Equatable {
    /// The friend (base64url public key).
    public var id: String
    /// The friend's display name.
    public var name: String
    /// The last opened location, if any.
    public var location: Location?
    /// The relay's `updated` time of that location (Unix seconds).
    public var updated: UInt64?
    /// When it was fetched (ms since the epoch).
    public var fetchedAt: UInt64?
    /// Whether the relay proved who uploaded it.
    public var authenticity: RelayAPI.Authenticity?
    /// The friend's marker colour (`#RRGGBB`).
    public var markerColor: String
    /// The nearest named place to ``location`` from the app's offline place data (see
    /// ``CoordsApp/Options/places``); nil without a location or with geocoding turned off.
    /// Use ``Place/phrase(accuracyMetres:)`` with the location's accuracy for display.
    public var place: Place? = nil
}

/// A refused fetch entry and why.
public struct FetchRejection: Sendable, Equatable {
    /// The entry's id as the relay keyed it.
    public var id: String
    /// Why it was refused.
    public var error: WireError
}

/// What processing one fetch response did.
public struct FetchOutcome: Sendable, Equatable {
    /// Friends whose cached location changed.
    public var updated: [FriendLocation] = []
    /// Friends with nothing new (no blob, or the same fix again).
    public var unchanged: [String] = []
    /// Entries refused: tampered, unverified in strict mode, rollbacks, blobs that do not open.
    public var rejected: [FetchRejection] = []
    /// Ids in the response that are not friends we fetch from.
    public var ignored: [String] = []

    /// An empty outcome.
    public init() {}

    /// Adds the results of another response (one fetch per server and batch).
    public mutating func merge(_ other: FetchOutcome) {
        updated += other.updated
        unchanged += other.unchanged
        rejected += other.rejected
        ignored += other.ignored
    }
}

/// What a host can ask location sharing to do.
public enum LocationManagerAction: Sendable {
    /// LocationManager/prepareUpload(_:).
    case prepareUpload(Location)
    /// LocationManager/markUploadSucceeded(fixTimestamp:).
    case markUploadSucceeded(fixTimestamp: UInt64)
    /// LocationManager/markUploadFailed(fixTimestamp:reason:).
    case markUploadFailed(fixTimestamp: UInt64, reason: String)
    /// LocationManager/prepareFetches().
    case prepareFetches
    /// LocationManager/processFetchResponse(_:) (the response body).
    case processFetchResponse([UInt8])
}

/// What location sharing tells the host, after the fact.
public enum LocationManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "location"

    /// An upload of the fix with this timestamp was sealed for `recipientCount` friends.
    case uploadPrepared(fixTimestamp: UInt64, recipientCount: Int)
    /// The relay stored the upload of this fix.
    case uploadSucceeded(fixTimestamp: UInt64)
    /// Uploading this fix failed (`reason` as the host reported it).
    case uploadFailed(fixTimestamp: UInt64, reason: String)
    /// `requestCount` fetch requests were prepared (per relay, at most 50 ids each).
    case fetchesPrepared(requestCount: Int)
    /// Friends' cached locations changed.
    case locationsUpdated([FriendLocation])
    /// A fetched entry was refused: its id, the failure's code and why.
    case entryRejected(id: String, code: Int32, message: String)
    /// A dispatched action failed: the failure's stable code (``InternalError``, 199, for an error from outside CoordsCore) and its description.
    case errorOccurred(code: Int32, message: String)
}

/// Location sharing: seals the user's fixes for themselves and their friends, prepares fetches,
/// and turns relay responses into friends' locations, refusing tampered entries and rollbacks.
public actor LocationManager {
    /// A cached fix younger than this may be reused for launch and background uploads.
    public static let maximumReuseAge: UInt64 = 5 * 60 * 1000
    /// A cached fix may be reused only when its accuracy radius is at most this many metres (the
    /// Coords design: "better than 100 m"); a coarser one asks for a fresh fix.
    public static let maximumReuseAccuracy: Float = 100
    /// Fixes further in the future than this (clock skew) are refused: they would block every
    /// later upload as "stale".
    public static let maximumFutureSkew: UInt64 = 10 * 60 * 1000
    /// How many prepared-but-unacknowledged fixes are remembered.
    static let pendingLimit = 16

    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<LocationManagerReconcileMessage> { reconciler.updates }

    /// Performs `action`; a failure is reported as ``LocationManagerReconcileMessage/errorOccurred(code:message:)``.
    public func dispatch(_ action: LocationManagerAction) {
        reconciler.reportingFailure {
            switch action {
            case .prepareUpload(let fix): _ = try prepareUpload(fix)
            case .markUploadSucceeded(let fix): try markUploadSucceeded(fixTimestamp: fix)
            case .markUploadFailed(let fix, let reason): markUploadFailed(fixTimestamp: fix, reason: reason)
            case .prepareFetches: _ = try prepareFetches()
            case .processFetchResponse(let body): _ = try processFetchResponse(body)
            }
        }
    }

    /// Whether the cached `fix` may be reused now for an upload of `reason` (the Coords design's
    /// policy: launch and background uploads may reuse a fix younger than ``maximumReuseAge`` (5
    /// minutes) whose accuracy radius is at most ``maximumReuseAccuracy`` (100 m); an explicit
    /// share needs a fresh fix). An accuracy that is not a finite, non-negative number is never good enough.
    public nonisolated static func mayReuse(_ fix: Location, now: UInt64, reason: UploadReason) -> Bool {
        guard fix.accuracy.isFinite, fix.accuracy >= 0, fix.accuracy <= maximumReuseAccuracy else { return false }
        return mayReuseFix(fixTimestamp: fix.timestamp, now: now, reason: reason)
    }

    /// The age half of ``mayReuse(_:now:reason:)`` alone: whether a fix taken at `fixTimestamp`
    /// is young enough to be reused now for an upload of `reason`. A host that knows the fix's
    /// accuracy asks ``mayReuse(_:now:reason:)`` instead.
    public nonisolated static func mayReuseFix(fixTimestamp: UInt64, now: UInt64, reason: UploadReason) -> Bool {
        guard reason != .explicit, now >= fixTimestamp else { return false }
        return now - fixTimestamp < maximumReuseAge
    }

    // MARK: Upload

    /// Seals `fix` for the user and every friend shared with (cached X25519 keys) and signs the
    /// upload. Send the request, then call ``markUploadSucceeded(fixTimestamp:)`` after a 2xx.
    /// - Throws: ``WireError/invalidLocation(_:)``, ``WireError/staleLocation(timestamp:lastUploaded:)``
    ///   (not newer than the last acknowledged upload), ``LocationManagerError/fixInFuture(fixTimestamp:now:)``,
    ///   ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``,
    ///   ``WireError/tooManyRecipients(count:maximum:)``, store errors.
    public func prepareUpload(_ fix: Location) throws -> PreparedUpload {
        try prepareUpload(fix, queueing: false).upload
    }

    /// ``prepareUpload(_:)``, and with `queueing` the outbox entry that sends it (kind `upload`,
    /// referring to the fix) written in the same transaction as the upload state: the outbox id,
    /// or nil without `queueing`. The caller announces the entry (``OutboxManagerReconcileMessage/queued(id:kind:)``).
    /// - Throws: as ``prepareUpload(_:)``.
    func prepareUpload(_ fix: Location, queueing: Bool) throws -> (upload: PreparedUpload, id: UInt64?) {
        try fix.validate()
        let identity = try context.identity.get()
        let now = context.clock.now()
        guard fix.timestamp <= now + Self.maximumFutureSkew else {
            throw LocationManagerError.fixInFuture(fixTimestamp: fix.timestamp, now: now)
        }
        let (server, friends) = try context.database.read { tx in
            (try tx.open(Tables.settings).get(SettingKey.server), try shareRecipients(in: tx, now: now))
        }
        guard let server, !server.isEmpty else { throw WalletManagerError.noServer }
        // The upload state is read once, in the write transaction that records the upload, which
        // also refuses a fix not newer than the last acknowledged one (nothing is written then).
        return try seal(
            wire: fix.wire, fixTimestamp: fix.timestamp, for: friends, identity: identity, server: server, now: now, refusingStale: true,
            queueing: queueing ? fix : nil)
    }

    /// The friends shared with at `now`. The friends table reduced to what sealing needs is kept
    /// between uploads and read again only when the table's change stamp moved (any change, by
    /// any manager or process), so an upload does not decode every friend record.
    private func shareRecipients(in tx: borrowing ReadTransaction, now: UInt64) throws -> [(id: String, key: X25519PublicKey)] {
        let stamp = (try tx.changeStamp(of: Tables.friends), try tx.changeStamp(of: Tables.groups))
        let candidates: [FriendsManager.ShareCandidate]
        if let view = shareView, view.stamp == stamp {
            candidates = view.candidates
        } else {
            candidates = try FriendsManager.shareCandidates(in: tx, me: try context.identity.get().id)
            shareView = (stamp, candidates)
        }
        return FriendsManager.sharing(candidates, at: now)
    }

    /// Seals `wire` for the user and `friends`, records it (pending, and as the last sealed fix
    /// for ``prepareReseal(force:)``) and signs the upload. With `refusingStale`, a fix not newer
    /// than the last acknowledged upload throws ``WireError/staleLocation(timestamp:lastUploaded:)``
    /// and nothing is recorded.
    private func seal(
        wire: WireLocation, fixTimestamp: UInt64, for friends: [(id: String, key: X25519PublicKey)], identity: Identity, server: String, now: UInt64,
        refusingStale: Bool = false
    ) throws -> PreparedUpload {
        try seal(
            wire: wire, fixTimestamp: fixTimestamp, for: friends, identity: identity, server: server, now: now, refusingStale: refusingStale, queueing: nil
        )
        .upload
    }

    /// ``seal(wire:fixTimestamp:for:identity:server:now:refusingStale:)``; with `queueing`, the
    /// upload is signed inside the transaction and queued in the outbox there (one commit).
    private func seal(
        wire: WireLocation, fixTimestamp: UInt64, for friends: [(id: String, key: X25519PublicKey)], identity: Identity, server: String, now: UInt64,
        refusingStale: Bool, queueing fix: Location?
    ) throws -> (upload: PreparedUpload, id: UInt64?) {
        var recipients = try blobRecipients(identity: identity, friends: friends, now: now)
        var blob: [UInt8]?
        // A friend's stored prekey of small order (accepted by a version that did not refuse such
        // keys) fails the seal: that friend gets an identity entry instead and the seal is made
        // again, so one friend's broken key never fails the upload for the others. Checked only
        // when it happens: the usual seal pays nothing for it.
        for _ in 0...friends.count where blob == nil {
            do {
                blob = try LocationBlob.seal(wire, for: recipients, using: context.random)
            } catch WireError.invalidRecipientKey(let index) where index > 0 && index <= friends.count && recipients[index] != friends[index - 1].key {
                recipients[index] = friends[index - 1].key
            }
        }
        guard let blob else { throw WireError.invalidRecipientKey(index: 0) }
        let uploads = context.uploadStates
        let (uploadTimestamp, written, stamp, queued) = try reconciler.write(context.database) {
            tx, messages -> (UInt64, UploadState, UInt64, (request: PreparedRequest, id: UInt64)?) in
            var state = try uploads.read(tx)
            if refusingStale, let last = state.lastUploadedFix, fixTimestamp <= last {
                throw WireError.staleLocation(timestamp: fixTimestamp, lastUploaded: last)
            }
            let signed = Self.nextSignedTimestamp(&state, now: now)
            var pending = state.pendingFixes.filter { $0 != fixTimestamp }
            pending.append(fixTimestamp)
            state.pendingFixes = Array(pending.suffix(Self.pendingLimit))
            state.lastSealedWire = Base64.encode(wire.bytes)
            state.lastSealedFix = fixTimestamp
            state.lastSealedFor = friends.map(\.id)
            let stamp = try uploads.write(state, tx)
            messages.append(.uploadPrepared(fixTimestamp: fixTimestamp, recipientCount: recipients.count))
            var queued: (request: PreparedRequest, id: UInt64)?
            if let fix {
                let request = try RelayAPI.prepareUpload(blob: blob, timestamp: signed, signer: identity.signing, server: server)
                let id = try OutboxQueue.enqueue(tx, kind: .upload, request: request, reference: String(fixTimestamp), location: fix, now: now)
                queued = (request, id)
            }
            return (signed, state, stamp, queued)
        }
        uploads.committed(written, stamp: stamp)
        let request = try queued?.request ?? RelayAPI.prepareUpload(blob: blob, timestamp: uploadTimestamp, signer: identity.signing, server: server)
        let upload = PreparedUpload(
            request: request, fixTimestamp: fixTimestamp, uploadTimestamp: uploadTimestamp,
            recipientCount: recipients.count, blobByteCount: blob.count)
        return (upload, queued?.id)
    }

    /// The keys a blob is sealed to (PROTOCOL.md §10.9): our own current signed prekey (or our
    /// identity), then each friend's accepted, unexpired signed prekey (or their identity).
    private func blobRecipients(identity: Identity, friends: [(id: String, key: X25519PublicKey)], now: UInt64) throws -> [X25519PublicKey] {
        let cache = context.signedPrekeyPublics
        return try context.database.read { tx in
            let publics = try cache.value(at: try tx.changeStamp(of: Tables.ownSignedPrekeys)) {
                try SessionsManager.ownSignedPrekeys(tx).map { ($0.publicKey, $0.replaced, $0.expires) }
            }
            let own = publics.first { !$0.replaced && now < $0.expires }
            var keys = [own?.publicKey ?? identity.x25519.publicKey]
            keys.reserveCapacity(friends.count + 1)
            // Most uploads have no friend with prekeys: one count instead of a lookup per friend.
            let prekeys = try tx.open(Tables.friendPrekeys)
            guard try prekeys.count() > 0 else { return keys + friends.map(\.key) }
            for friend in friends {
                let key = try Ed25519PublicKey(base64URL: friend.id)
                keys.append(try prekeys.get(key)?.usableSignedPrekey(at: now)?.key ?? friend.key)
            }
            return keys
        }
    }

    /// The keys our blob entries may be sealed to, identity first, then the signed prekeys still
    /// kept, newest first (§10.9).
    nonisolated func readerKeys(_ identity: Identity) throws -> [X25519PrivateKey] {
        try [identity.x25519] + context.database.read { tx in try SessionsManager.ownSignedPrekeys(tx).map { $0.key() } }
    }

    /// After a share ended (its time passed, ``FriendsManager/pause(id:)``,
    /// ``FriendsManager/remove(id:)``; PROTOCOL.md §9.3): the last sealed fix sealed again for the
    /// friends shared with now, with a fresh upload timestamp — or nil when everyone who could
    /// open the last blob may still see it, or nothing was sealed yet. Send it at once and mark
    /// it like any upload (``markUploadSucceeded(fixTimestamp:)``): the friend whose share ended
    /// cannot open it, so the last blob they can open is the last one they were meant to see.
    /// - Parameter force: reseal even when nobody lost their share (a retry of a reseal that
    ///   could not be sent: the latest fix, sealed for the friends shared with now).
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store errors.
    public func prepareReseal(force: Bool = false) throws -> PreparedUpload? {
        try reseal { sealedFor, current in force || sealedFor.contains(where: { !current.contains($0) }) }
    }

    /// After a friend was added or a share with them began again (the Coords design: adding a
    /// friend always shares at once): the last sealed fix sealed again for the friends shared
    /// with now — or nil when every one of them could open the last blob already, or nothing was
    /// sealed yet (the next fix then reaches them). The fix keeps its time: the new friend sees
    /// the position the others see. Send it at once and mark it like any upload.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store errors.
    public func prepareShareWithNewFriends() throws -> PreparedUpload? {
        try reseal { sealedFor, current in current.contains(where: { !sealedFor.contains($0) }) }
    }

    /// The reseal a change of sharing owes (`FriendsManager.ShareChange`): the last sealed fix sealed again for
    /// the friends shared with now, with a fresh upload timestamp — or nil when the last blob's
    /// recipients are exactly those friends already, or nothing was sealed yet.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store errors.
    func prepareOwedReseal() throws -> PreparedUpload? {
        try reseal { sealedFor, current in Set(sealedFor) != current }
    }

    /// The last sealed fix sealed again for the friends shared with now, when `needed(sealedFor,
    /// current)` says so.
    private func reseal(when needed: ([String], Set<String>) -> Bool) throws -> PreparedUpload? {
        let now = context.clock.now()
        let (server, friends, state) = try context.database.read { tx in
            (
                try tx.open(Tables.settings).get(SettingKey.server),
                try shareRecipients(in: tx, now: now),
                try tx.open(Tables.uploadState).get(UploadState.key) ?? UploadState()
            )
        }
        guard let wireText = state.lastSealedWire, let fixTimestamp = state.lastSealedFix, let sealedFor = state.lastSealedFor else { return nil }
        guard needed(sealedFor, Set(friends.map(\.id))) else { return nil }
        let identity = try context.identity.get()
        guard let server, !server.isEmpty else { throw WalletManagerError.noServer }
        guard let bytes = try? Base64.decode(wireText), let wire = try? WireLocation(bytes: bytes) else {
            throw StoreError.decodingFailed(table: Tables.uploadState.name, type: UploadState.storeTypeName, reason: "the last sealed fix is damaged")
        }
        return try seal(wire: wire, fixTimestamp: fixTimestamp, for: friends, identity: identity, server: server, now: now)
    }

    /// When the next share ends (ms since the epoch), or nil when no share has an end ahead:
    /// the host sets a timer for it and then calls ``prepareReseal(force:)``.
    /// - Throws: store errors.
    public nonisolated func nextShareExpiry() throws -> UInt64? {
        let now = context.clock.now()
        return try context.database.read { tx in
            try tx.open(Tables.friends).entries().compactMap { _, record in
                record.isSharing(at: now) ? record.shareUntil : nil
            }.min()
        }
    }

    /// Records that the relay acknowledged the upload of the fix from `fixTimestamp` (a 2xx):
    /// older or equal fixes are refused as stale from now on.
    /// - Throws: ``LocationManagerError/unknownUpload(fixTimestamp:)`` for a fix that was never
    ///   prepared (marking the same upload twice is fine), store errors.
    public func markUploadSucceeded(fixTimestamp: UInt64) throws {
        let now = context.clock.now()
        let uploads = context.uploadStates
        let written = try reconciler.write(context.database) { tx, messages in
            guard let written = try Self.recordUploadSucceeded(fixTimestamp: fixTimestamp, now: now, tx, uploads: uploads) else {
                throw LocationManagerError.unknownUpload(fixTimestamp: fixTimestamp)
            }
            messages.append(.uploadSucceeded(fixTimestamp: fixTimestamp))
            return written
        }
        uploads.committed(written.state, stamp: written.stamp)
    }

    /// Whether the relay acknowledged an upload of the fix from `fixTimestamp` or a newer one
    /// (recorded by this process or another on the same directory).
    /// - Throws: store errors.
    func isAcknowledged(fixTimestamp: UInt64) throws -> Bool {
        let state = try context.database.read { tx in try context.uploadStates.read(tx) }
        return state.lastUploadedFix.map { fixTimestamp <= $0 } ?? false
    }

    /// ``markUploadSucceeded(fixTimestamp:)`` inside `tx` (the outbox records a delivered upload
    /// in the transaction that removes its entry). Returns false, writing nothing, for a fix that
    /// was never prepared.
    /// - Returns: the state written and its stamp (hand them to ``UploadStateCache/committed(_:stamp:)``
    ///   after the commit), or nil when nothing was written.
    static func recordUploadSucceeded(
        fixTimestamp: UInt64, now: UInt64, _ tx: borrowing WriteTransaction, uploads: UploadStateCache
    ) throws -> (state: UploadState, stamp: UInt64)? {
        var state = try uploads.read(tx)
        let alreadyRecorded = state.lastUploadedFix.map { fixTimestamp <= $0 } ?? false
        guard state.pendingFixes.contains(fixTimestamp) || alreadyRecorded else { return nil }
        state.pendingFixes.removeAll { $0 <= fixTimestamp }
        if !alreadyRecorded {
            state.lastUploadedFix = fixTimestamp
            state.lastUploadAt = now
        }
        return (state, try uploads.write(state, tx))
    }

    /// A signed `DELETE <server>/api/location` that removes the user's blob from their relay
    /// (PROTOCOL.md §6; reference relays answer 404/405 to it).
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store errors.
    public func prepareDelete() throws -> PreparedRequest {
        let identity = try context.identity.get()
        let server = try context.database.read { tx in try tx.open(Tables.settings).get(SettingKey.server) }
        guard let server, !server.isEmpty else { throw WalletManagerError.noServer }
        let now = context.clock.now()
        let timestamp = try context.database.write { tx -> UInt64 in
            let table = try tx.open(Tables.uploadState)
            var state = try table.get(UploadState.key) ?? UploadState()
            let signed = Self.nextSignedTimestamp(&state, now: now)
            try table.put(UploadState.key, state)
            return signed
        }
        return try RelayAPI.prepareDelete(timestamp: timestamp, signer: identity.signing, server: server)
    }

    /// The time to sign the next request with: now (seconds), but always after the previous
    /// one, so two requests in the same second do not look like a replay to the relay.
    static func nextSignedTimestamp(_ state: inout UploadState, now: UInt64) -> UInt64 {
        let signed = SignedTime.next(after: state.lastSignedTimestamp, now: now / 1000)
        state.lastSignedTimestamp = signed
        return signed
    }

    /// Reports a failed upload (network error or relay refusal). Nothing is recorded: the fix
    /// may be uploaded again.
    public func markUploadFailed(fixTimestamp: UInt64, reason: String) {
        reconciler.send(.uploadFailed(fixTimestamp: fixTimestamp, reason: reason))
    }

    /// The upload bookkeeping (last acknowledged fix, when, and pending fixes).
    /// - Throws: store errors.
    public nonisolated func uploadState() throws -> UploadState {
        try context.database.read { tx in try tx.open(Tables.uploadState).get(UploadState.key) } ?? UploadState()
    }

    // MARK: Fetch

    /// One `POST …/api/location` per server of the friends we fetch from, at most 50 ids each.
    /// - Throws: ``WireError/invalidServerURL(_:)`` for a friend with a bad server, store errors.
    public func prepareFetches() throws -> [RelayAPI.PreparedFetch] {
        try prepareFetches(skipping: { _ in false }).fetches
    }

    /// The fetches of friends' positions (``prepareFetches()``) without the friends `skip` names
    /// (those watched over a live connection), with how many were skipped and the friends
    /// table's change stamp they were read at (a later change may add a friend to fetch).
    func prepareFetches(skipping skip: (RelayAPI.FetchTarget) -> Bool) throws
        -> (fetches: [RelayAPI.PreparedFetch], skipped: Int, friendsStamp: UInt64)
    {
        let (targets, stamp) = try context.database.read { tx in
            (try FriendsManager.fetchTargets(in: tx), try tx.changeStamp(of: Tables.friends))
        }
        let wanted = targets.filter { !skip($0) }
        let fetches = try RelayAPI.prepareFetches(wanted)
        // Nothing prepared because the live channel watches everyone: nothing to tell.
        if !fetches.isEmpty || wanted.count == targets.count { reconciler.send(.fetchesPrepared(requestCount: fetches.count)) }
        return (fetches, targets.count - wanted.count, stamp)
    }

    /// Processes one fetch response body: verifies the relay's signature stamps (refusing
    /// unstamped entries in strict mode), opens the blobs, refuses rollbacks, and caches only
    /// opened, newer locations. Entries for anyone but fetched friends are ignored.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WireError/invalidJSON(_:)`` or
    ///   ``WireError/unexpectedJSON(_:)`` when the body is not a fetch response, store errors.
    public func processFetchResponse(_ body: [UInt8]) throws -> FetchOutcome {
        let identity = try context.identity.get()
        let strict = try context.isStrictMode()
        return try process(try RelayAPI.processFetchResponse(body, readers: try readerKeys(identity), options: .init(requireSignatures: strict)))
    }

    /// Caches what `entries` (a fetch answer or a live notice, §8.3) bring, in one transaction.
    func process(_ entries: [RelayAPI.FetchEntry]) throws -> FetchOutcome {
        let now = context.clock.now()
        return try reconciler.write(context.database) { tx, messages in
            let friends = try tx.open(Tables.friends)
            let cache = try tx.open(Tables.locations)
            var outcome = FetchOutcome()
            for entry in entries {
                // An entry for an id that is not a key is nobody we fetch from: ignored and reported.
                guard let key = try? Ed25519PublicKey(base64URL: entry.id), let friend = try friends.get(key),
                    friend.fetchFrom, friend.trust != .blocked
                else {
                    outcome.ignored.append(entry.id)
                    continue
                }
                if let error = entry.error {
                    outcome.rejected.append(FetchRejection(id: entry.id, error: error))
                    continue
                }
                guard let location = entry.location else {
                    outcome.unchanged.append(entry.id)
                    continue
                }
                if friend.addedBackAt == nil {  // their blob opened for us: they have added us back
                    var record = friend
                    record.addedBackAt = now
                    try friends.put(key, record)
                }
                let cached = try cache.get(key)
                if let cached, cached.location.timestamp > location.timestamp {
                    outcome.rejected.append(
                        FetchRejection(
                            id: entry.id,
                            error: .rollback(
                                id: entry.id, cachedTimestamp: cached.location.timestamp,
                                fetchedTimestamp: location.timestamp)))
                    continue
                }
                if let cached, cached.location == location {
                    outcome.unchanged.append(entry.id)
                    continue
                }
                let record = CachedLocation(location: location, updated: entry.updated, fetchedAt: now, authenticity: entry.authenticity)
                try cache.put(key, record)
                outcome.updated.append(Self.view(key: key, friend: friend, cached: record, places: context.places))
            }
            if !outcome.updated.isEmpty { messages.append(.locationsUpdated(outcome.updated)) }
            for rejection in outcome.rejected {
                messages.append(.entryRejected(id: rejection.id, code: rejection.error.code, message: rejection.error.description))
            }
            return outcome
        }
    }

    /// Every friend we fetch from, with their cached location (if any), ordered by name.
    /// - Throws: store errors.
    public nonisolated func friendLocations() throws -> [FriendLocation] {
        try context.database.read { tx in
            let cache = try tx.open(Tables.locations)
            return try tx.open(Tables.friends).entries()
                .filter { $0.value.fetchFrom }
                .map { Self.view(key: $0.key, friend: $0.value, cached: try cache.get($0.key), places: context.places) }
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    static func view(key: Ed25519PublicKey, friend: FriendRecord, cached: CachedLocation?, places: PlaceSource) -> FriendLocation {
        let id = key.base64URL
        return FriendLocation(
            id: id, name: friend.name, location: cached?.location, updated: cached?.updated,
            fetchedAt: cached?.fetchedAt, authenticity: cached?.authenticity, markerColor: MarkerColor(id: id).hex,
            place: cached.flatMap { places.nearest(to: $0.location) })
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<LocationManagerReconcileMessage>
    /// The share candidates as of a change stamp of the friends table (``shareRecipients(in:now:)``).
    private var shareView: (stamp: (friends: UInt64, groups: UInt64), candidates: [FriendsManager.ShareCandidate])?

    init(context: AppContext, spine: UpdateSpine) {
        self.context = context
        reconciler = Reconciler(spine, as: AppUpdate.location, from: \.location, logger: context.logger)
    }
}
