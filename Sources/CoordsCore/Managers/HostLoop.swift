import Synchronization

/// What a request from ``CoordsApp/due(now:only:ignoringBackoff:)`` is for; ``CoordsApp/report(id:status:body:)``
/// routes its answer by it. A host needs none of this to carry the request: it is for logs.
public enum HostRequestPurpose: String, Sendable, Equatable, CaseIterable {
    /// An outbox entry: an upload, a reseal, a delete, a message, a receipt, a statement, …
    case outbox
    /// A fetch of friends' positions from one relay (a batch of up to 50).
    case fetch
    /// A fetch of our mailbox (§7).
    case mailbox
    /// An acknowledgement of envelopes read from our mailbox (its answer changes nothing).
    case ack
    /// The publication of our prekeys (§10.2).
    case prekeys
    /// The fetch of a friend's prekey bundle (§10.4).
    case bundle
}

/// One HTTP request the host should perform now (``CoordsApp/due(now:only:ignoringBackoff:)``), signed at the moment
/// it was handed out.
public struct HostRequest: Sendable, Equatable {
    /// The ticket to hand back with the answer (``CoordsApp/report(id:status:body:)``); unique
    /// while the app is open.
    public var id: UInt64
    /// What the request is for.
    public var purpose: HostRequestPurpose
    /// The request to perform.
    public var request: PreparedRequest
    /// For ``HostRequestPurpose/outbox``: the outbox entry's id and kind.
    public var outboxID: UInt64?
    /// For ``HostRequestPurpose/outbox``: the entry's kind.
    public var outboxKind: OutboxKind?
}

/// What the core made of one answer (``CoordsApp/report(id:status:body:)``). Everything it
/// implies is already recorded and queued; a host only shows it.
public enum HostAnswer: Sendable, Equatable {
    /// An outbox entry's fate.
    case outbox(OutboxReport)
    /// Friends' positions were fetched and processed.
    case locations(FetchOutcome)
    /// Our mailbox was read and processed; acks, receipts and resets it owes are queued and come
    /// out of the next ``CoordsApp/due(now:only:ignoringBackoff:)``.
    case messages(MessagesOutcome)
    /// Our prekeys were published; the relay's one-time prekey stock (nil: not published).
    case prekeys(stock: Int?)
    /// A friend's prekey bundle was processed.
    case bundle(friend: String, BundleOutcome)
    /// An acknowledgement went (or not: the next read acknowledges again).
    case acknowledged
    /// The request failed (no answer, or the relay refused it): tried again at `retryAt`.
    case failed(retryAt: UInt64, reason: String)
    /// No request has this ticket (already reported, or handed out before the app reopened).
    case unknown
}

/// The host loop's memory of one open app: tickets in flight and when each periodic request
/// is due. Not stored: after a restart everything periodic is due at once.
final class HostLoop: Sendable {
    /// How long a handed-out request may go unreported before it is handed out again (ms): a
    /// host that was killed mid-request, or lost the answer, does not stall the app.
    static let inFlightLimit: UInt64 = 120_000
    /// How often the prekey upkeep and friends' bundles are looked at (ms).
    static let prekeyCheckInterval: UInt64 = 600_000
    /// How often the sessions are swept (ms).
    static let sessionSweepInterval: UInt64 = 3_600_000
    /// The default fetch interval (ms).
    static let defaultFetchInterval: UInt64 = 60_000

    enum Ticket: Sendable, Equatable {
        case outbox(UInt64)
        case fetch(server: String)
        case mailbox
        case ack
        case prekeys
        case bundle(friend: String)
    }

    /// A periodic request: when it is due next and how many times in a row it failed.
    struct Periodic: Sendable {
        var dueAt: UInt64 = 0
        var failures: UInt32 = 0

        mutating func succeeded(now: UInt64, every interval: UInt64?) {
            failures = 0
            dueAt = interval.map { now.addingSaturating($0) } ?? .max
        }

        mutating func failed(now: UInt64) -> UInt64 {
            failures = failures.addingSaturating(1)
            dueAt = now.addingSaturating(Backoff.delay(attempts: failures))
            return dueAt
        }
    }

    struct State: Sendable {
        var nextTicket: UInt64 = 1
        var inFlight: [UInt64: (ticket: Ticket, at: UInt64)] = [:]
        var fetchInterval: UInt64? = HostLoop.defaultFetchInterval
        var fetch = Periodic()
        var mailbox = Periodic()
        /// A fetch of every position, or a mailbox read, was asked for (``CoordsApp/fetchNow()``,
        /// a mailbox with more waiting): the live channel's watch does not excuse it.
        var fetchUrgent = false
        var mailboxUrgent = false
        /// The last periodic fetch found every friend watched by a live connection: the live
        /// channel's generation and the friends table's change stamp it saw. While both hold, the
        /// next wake leaves the periodic fetch out.
        var fetchWatched: (generation: UInt64, friendsStamp: UInt64)?
        /// Who was shared with at the last wake (``FriendsManager/ShareChange/SharingView``).
        var sharingView: FriendsManager.ShareChange.SharingView?
        var prekeys = Periodic()
        var bundles = Periodic()
        var sessionSweepAt: UInt64 = 0
        /// When disappearing messages are due to be deleted (ms; 0: at once, after open).
        var messageSweepAt: UInt64 = 0
        var acks: [PreparedRequest] = []
        /// The kind and reference of each outbox entry out (by entry id), for an answer that
        /// finds its entry gone: another process on the same directory settled it meanwhile.
        var handedOutbox: [UInt64: (kind: OutboxKind, reference: String?)] = [:]

        /// Whether a request for `ticket` is out and not yet given up on.
        func isInFlight(_ ticket: Ticket, now: UInt64) -> Bool {
            inFlight.values.contains { $0.ticket == ticket && Self.isLive($0.at, now: now) }
        }

        /// Whether a fetch of positions (any relay) is out and not yet given up on.
        func isFetching(now: UInt64) -> Bool {
            inFlight.values.contains { flight in
                guard case .fetch = flight.ticket else { return false }
                return Self.isLive(flight.at, now: now)
            }
        }

        /// The outbox entries out and not yet given up on.
        func busyOutboxEntries(now: UInt64) -> Set<UInt64> {
            Set(
                inFlight.values.compactMap { flight in
                    guard case .outbox(let entry) = flight.ticket, Self.isLive(flight.at, now: now) else { return nil }
                    return entry
                })
        }

        private static func isLive(_ handedAt: UInt64, now: UInt64) -> Bool {
            now < handedAt.addingSaturating(HostLoop.inFlightLimit)
        }

        mutating func take(_ ticket: Ticket, now: UInt64) -> UInt64 {
            // Requests given up on are forgotten (an answer that comes later is `unknown`; the
            // request went out again), so a host that never reports cannot grow this without bound.
            inFlight = inFlight.filter { Self.isLive($0.value.at, now: now) }
            let out = busyOutboxEntries(now: now)
            handedOutbox = handedOutbox.filter { out.contains($0.key) }
            let id = nextTicket
            nextTicket = nextTicket.addingSaturating(1)
            inFlight[id] = (ticket, now)
            return id
        }
    }

    let state = Mutex(State())
}

extension UInt32 {
    fileprivate func addingSaturating(_ other: UInt32) -> UInt32 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

// MARK: The one wake

extension CoordsApp {
    /// How often friends' positions and the mailbox are fetched when nothing else asks (ms;
    /// default 60 000), or nil to fetch only when ``fetchNow()`` is called (a host woken by push
    /// or a live notice). Takes effect from the next fetch on.
    public var fetchInterval: UInt64? {
        get { loop.state.withLock { $0.fetchInterval } }
        set { loop.state.withLock { $0.fetchInterval = newValue.map { max($0, 1000) } } }
    }

    /// Makes the position and mailbox fetches due now: call it when a push arrives, a live
    /// connection says something changed (§8), or the app comes to the foreground.
    public func fetchNow() {
        loop.state.withLock { state in
            state.fetch.dueAt = 0
            state.mailbox.dueAt = 0
            state.fetchUrgent = true
            state.mailboxUrgent = true
        }
    }

    /// When to call ``due(now:only:ignoringBackoff:)`` next (ms since the epoch; `now` when something is due
    /// already), or nil when nothing will ever be due without a call from the host (no
    /// identity yet, or nothing queued and no fetch interval). The earliest of: the outbox's next
    /// attempt and the push registration's renewal, the next share's end (its reseal), the next
    /// disappearing message, the next fetch and mailbox read, the prekey upkeep, the session
    /// sweep, and a request handed out but never reported (handed out again after 2 minutes).
    /// - Parameter now: the time to judge by (ms since the epoch); nil: the app's clock.
    /// - Throws: store errors.
    public func nextWake(now: UInt64? = nil) throws -> UInt64? {
        guard context.identity.isLoaded else { return nil }
        let now = now ?? context.clock.now()
        let state = loop.state.withLock { $0 }
        let busy = state.busyOutboxEntries(now: now)
        var times: [UInt64?] = [
            try outbox.pending().filter { !busy.contains($0.id) }.map(\.item.nextAttemptAt).min(),
            try messages.pushRenewalAt(), try location.nextShareExpiry(), try messages.nextExpiry(), state.messageSweepAt,
            state.sessionSweepAt, state.isInFlight(.prekeys, now: now) ? nil : state.prekeys.dueAt, state.bundles.dueAt,
            state.acks.isEmpty ? nil : now,
            state.inFlight.values.map { $0.at.addingSaturating(HostLoop.inFlightLimit) }.min()
        ]
        // What a confirmed live connection watches is not fetched periodically (``LiveSession``).
        let coverage = live.coverage()
        let mailboxWatched = coverage.mailbox && !state.mailboxUrgent
        var fetchWatched = false
        if let watched = state.fetchWatched, !state.fetchUrgent, watched.generation == coverage.generation {
            fetchWatched = watched.friendsStamp == (try context.database.read { tx in try tx.changeStamp(of: Tables.friends) })
        }
        times.append(state.isInFlight(.mailbox, now: now) || mailboxWatched ? nil : state.mailbox.dueAt)
        times.append(state.isFetching(now: now) || fetchWatched ? nil : state.fetch.dueAt)
        // Something due already reads as now (never 0, which the C ABI uses for "nothing").
        return times.compactMap { $0 }.filter { $0 != .max }.min().map { max($0, now) }
    }

    /// Everything to send now, each request signed now: the local work that is due is done
    /// first (disappearing messages deleted, sessions swept, the reseal a share's end owes
    /// queued), then the outbox's due entries, the prekey publication and friends' bundles when
    /// due, the fetch of friends' positions (one request per relay and 50 friends) and of the
    /// mailbox when due, and the acknowledgements a mailbox read owes. A request handed out is
    /// not handed out again until it is reported, or for 2 minutes. Perform each (in any order,
    /// side by side if you like) and hand every answer to ``report(id:status:body:)``.
    ///
    /// One party's bad state never stops the rest: a friend whose bundle cannot be asked for is
    /// skipped, and a part that cannot be prepared (no server yet) waits for its next turn.
    /// - Parameters:
    ///   - now: the time to judge by (ms since the epoch); nil: the app's clock.
    ///   - purposes: only requests for these (nil: all). A one-shot command that only delivers
    ///     what waits asks for `[.outbox]`; the rest stays due for the next call.
    ///   - ignoringBackoff: hand out outbox entries still backing off from a failure too (a
    ///     person asked now); a long-running host leaves it false.
    /// - Returns: the requests (empty when nothing is due, or there is no identity yet).
    /// - Throws: store errors.
    public func due(now: UInt64? = nil, only purposes: Set<HostRequestPurpose>? = nil, ignoringBackoff: Bool = false) async throws
        -> [HostRequest]
    {
        guard let identity = try? context.identity.get() else { return [] }  // no identity: nothing to send
        let now = now ?? context.clock.now()
        let wanted = purposes ?? Set(HostRequestPurpose.allCases)
        try await doLocalWork(now: now, me: identity.id)
        var requests: [HostRequest] = []
        func hand(_ ticket: HostLoop.Ticket, _ purpose: HostRequestPurpose, _ request: PreparedRequest, entry: OutboxEntry? = nil) {
            let id = loop.state.withLock { state in
                let id = state.take(ticket, now: now)
                if let entry { state.handedOutbox[entry.id] = (entry.item.kind, entry.item.reference) }
                return id
            }
            requests.append(HostRequest(id: id, purpose: purpose, request: request, outboxID: entry?.id, outboxKind: entry?.item.kind))
        }
        if wanted.contains(.outbox) {
            let busy = loop.state.withLock { $0.busyOutboxEntries(now: now) }
            for entry in try await outboxDue(now: now, ignoringBackoff: ignoringBackoff) where !busy.contains(entry.id) {
                hand(.outbox(entry.id), .outbox, entry.item.request, entry: entry)
            }
        }
        let state = loop.state.withLock { $0 }
        if wanted.contains(.prekeys), state.prekeys.dueAt <= now, !state.isInFlight(.prekeys, now: now) {
            do {
                if let upload = try sessions.preparePrekeyUpload() {
                    hand(.prekeys, .prekeys, upload)
                } else {
                    loop.state.withLock { $0.prekeys.succeeded(now: now, every: HostLoop.prekeyCheckInterval) }
                }
            } catch let error as StoreError {
                throw error
            } catch {
                // No server yet: the upkeep waits for its next turn.
                loop.state.withLock { $0.prekeys.succeeded(now: now, every: HostLoop.prekeyCheckInterval) }
            }
        }
        if wanted.contains(.bundle), state.bundles.dueAt <= now {
            loop.state.withLock { $0.bundles.succeeded(now: now, every: HostLoop.prekeyCheckInterval) }
            for friend in try sessions.bundlesDue() where !state.isInFlight(.bundle(friend: friend), now: now) {
                do {
                    hand(.bundle(friend: friend), .bundle, try sessions.prepareBundleRequest(for: friend))
                } catch let error as StoreError {
                    throw error
                } catch {
                    context.logger.notice("a friend's prekey bundle cannot be asked for", metadata: ["friend": "\(friend.prefix(8))", "error": "\(error)"])
                }
            }
        }
        let fetching = state.isFetching(now: now)
        if wanted.contains(.fetch), state.fetch.dueAt <= now, !fetching {
            do {
                // Friends a confirmed live connection watches are left out, unless asked for now.
                let coverage = state.fetchUrgent ? nil : live.coverage()
                let prepared = try await location.prepareFetches(skipping: { coverage?.watches($0) == true })
                loop.state.withLock { state in
                    state.fetch.succeeded(now: now, every: state.fetchInterval)
                    state.fetchUrgent = false
                    state.fetchWatched =
                        prepared.fetches.isEmpty && prepared.skipped > 0
                        ? coverage.map { ($0.generation, prepared.friendsStamp) } : nil
                }
                for fetch in prepared.fetches { hand(.fetch(server: fetch.server), .fetch, fetch.request) }
            } catch let error as StoreError {
                throw error
            } catch {
                loop.state.withLock { _ = $0.fetch.failed(now: now) }
                context.logger.notice("friends' positions cannot be fetched now", metadata: ["error": "\(error)"])
            }
        }
        if wanted.contains(.mailbox), state.mailbox.dueAt <= now, !state.isInFlight(.mailbox, now: now),
            !state.mailboxUrgent, live.coverage().mailbox
        {
            // The live channel tells of every envelope (and the reconnect reads what it missed).
            loop.state.withLock { $0.mailbox.succeeded(now: now, every: $0.fetchInterval) }
        } else if wanted.contains(.mailbox), state.mailbox.dueAt <= now, !state.isInFlight(.mailbox, now: now) {
            loop.state.withLock { $0.mailboxUrgent = false }
            do {
                hand(.mailbox, .mailbox, try messages.prepareFetch())
            } catch let error as StoreError {
                throw error
            } catch {
                loop.state.withLock { _ = $0.mailbox.failed(now: now) }  // no server yet
            }
        }
        let acks =
            !wanted.contains(.ack)
            ? []
            : loop.state.withLock { state -> [PreparedRequest] in
                defer { state.acks = [] }
                return state.acks
            }
        for ack in acks { hand(.ack, .ack, ack) }
        return requests
    }

    /// Takes the answer to request `id` from ``due(now:only:ignoringBackoff:)`` and does everything it implies: an
    /// outbox entry delivered, retried or dropped (``OutboxManager/report(id:status:body:)``);
    /// positions or mailbox envelopes processed (acks, receipts, resets and reseals queued for
    /// the next ``due(now:only:ignoringBackoff:)``; another read due at once while the mailbox has more); prekeys and
    /// bundles recorded. A failed fetch, read or publication is tried again after the backoff
    /// (1 s → 60 s).
    /// - Parameters:
    ///   - id: the request's ticket.
    ///   - status: the HTTP status, or 0 when no answer came.
    ///   - body: the answer's body, or for status 0 a UTF-8 description of the failure.
    /// - Returns: what the core made of it.
    /// - Throws: store and keychain errors (then report again).
    @discardableResult
    public func report(id: UInt64, status: Int, body: [UInt8] = []) async throws -> HostAnswer {
        let now = context.clock.now()
        guard let ticket = loop.state.withLock({ $0.inFlight.removeValue(forKey: id)?.ticket }) else { return .unknown }
        func failed(_ periodic: WritableKeyPath<HostLoop.State, HostLoop.Periodic>, _ reason: String) -> HostAnswer {
            let at = loop.state.withLock { $0[keyPath: periodic].failed(now: now) }
            return .failed(retryAt: at, reason: reason)
        }
        switch ticket {
        case .outbox(let entry):
            let handed = loop.state.withLock { $0.handedOutbox.removeValue(forKey: entry) }
            let report = try await outboxReport(id: entry, status: status, body: body)
            // The entry is gone: a second process running the loop on this directory (an app and
            // its extension, two CLI commands) took and settled it meanwhile. An upload the store
            // shows acknowledged was delivered (by that process); anything else stays unknown.
            if report.decision == .unknown, let handed, handed.kind.isUploadOfFix,
                let fix = handed.reference.flatMap(UInt64.init), try await location.isAcknowledged(fixTimestamp: fix)
            {
                return .outbox(OutboxReport(id: entry, kind: handed.kind, decision: .delivered))
            }
            return .outbox(report)
        case .ack:
            return .acknowledged
        case .fetch:
            guard status == 200 else { return failed(\.fetch, OutboxManager.reason(status: status, body: body)) }
            do {
                return .locations(try await location.processFetchResponse(body))
            } catch let error as StoreError {
                throw error
            } catch {
                return failed(\.fetch, "\(error)")
            }
        case .mailbox:
            guard status == 200 else { return failed(\.mailbox, OutboxManager.reason(status: status, body: body)) }
            let outcome: MessagesOutcome
            do {
                outcome = try await messages.processFetchResponse(body)
            } catch let error as StoreError {
                throw error
            } catch {
                return failed(\.mailbox, "\(error)")
            }
            loop.state.withLock { state in
                state.acks += outcome.acks
                // While the mailbox has more, the next read is due at once; else after the interval.
                state.mailbox.succeeded(now: now, every: outcome.more ? 0 : state.fetchInterval)
                state.mailboxUrgent = state.mailboxUrgent || outcome.more
            }
            _ = try await messages.sweepExpired()
            return .messages(outcome)
        case .prekeys:
            let stock: Int?
            do {
                stock = try sessions.processPrekeyUpload(status: status, body: body)
            } catch let error as StoreError {
                throw error
            } catch {
                return failed(\.prekeys, "\(error)")
            }
            if stock == nil, status == 0 || OutboxManager.isTransient(status) {
                return failed(\.prekeys, OutboxManager.reason(status: status, body: body))
            }
            loop.state.withLock { $0.prekeys.succeeded(now: now, every: HostLoop.prekeyCheckInterval) }
            return .prekeys(stock: stock)
        case .bundle(let friend):
            do {
                return .bundle(friend: friend, try sessions.processBundle(for: friend, status: status, body: body))
            } catch let error as StoreError {
                throw error
            } catch {
                // The friend went away meanwhile: their bundle is nobody's; the next turn asks whoever is due.
                return .failed(retryAt: loop.state.withLock { $0.bundles.dueAt }, reason: "\(error)")
            }
        }
    }

    /// The work ``due(now:only:ignoringBackoff:)`` does on the device before handing out requests.
    private func doLocalWork(now: UInt64, me: String) async throws {
        // The store names a message's expiry only until it passes (then the end of its minute), so
        // the time read at the last wake is kept: the first wake after open sweeps at once.
        let sweepAt = min(loop.state.withLock { $0.messageSweepAt }, try messages.nextExpiry() ?? .max)
        if sweepAt <= now { _ = try await messages.sweepExpired() }
        let nextSweep = try messages.nextExpiry() ?? .max
        loop.state.withLock { $0.messageSweepAt = nextSweep }
        if loop.state.withLock({ $0.sessionSweepAt <= now }) {
            try sessions.sweep()
            loop.state.withLock { $0.sessionSweepAt = now.addingSaturating(HostLoop.sessionSweepInterval) }
        }
        // A share whose end passed (or any change of who is shared with that nothing queued for):
        // read first, so a wake with nothing owed writes nothing. Who is shared with is worked out
        // again (reading and decoding every friend) only when friends or groups changed or a
        // share ended since the last wake.
        var view = loop.state.withLock { $0.sharingView }
        let owed = try context.database.read { tx in try FriendsManager.ShareChange.owed(tx, now: now, me: me, view: &view, uploads: context.uploadStates) }
        loop.state.withLock { $0.sharingView = view }
        if let owed {
            _ = try context.database.write { tx in try FriendsManager.ShareChange.queueReseal(tx, owed, now: now) }
        }
    }
}

// MARK: The outbox with its follow-ups (for hosts that drive the outbox alone)

extension CoordsApp {
    /// The outbox's due entries (``OutboxManager/due(now:ignoringBackoff:)``), with the push
    /// registration's silent renewal (PROTOCOL.md §8.7) queued first when it is due. ``due(now:only:ignoringBackoff:)``
    /// hands these out too; this is for a host that drives only the outbox (`coords_outbox_due`).
    /// - Throws: store errors.
    public func outboxDue(now: UInt64? = nil, ignoringBackoff: Bool = false) async throws -> [OutboxEntry] {
        let now = now ?? context.clock.now()
        if let renewal = try messages.duePushRenewal(now: now) {
            _ = try await outbox.enqueue(kind: .request, request: renewal, reference: OutboxManager.pushRenewalReference)
        }
        return try await outbox.due(now: now, ignoringBackoff: ignoringBackoff)
    }

    /// ``OutboxManager/report(id:status:body:)`` and what its decision implies beyond the outbox:
    /// after a delivered rotation statement, the next statement of that friend's chain is queued
    /// (§9.1); a push renewal the relay refuses (400, 404) forgets the registration, since
    /// renewing is pointless.
    /// - Throws: store and keychain errors (the decision is then not recorded; report again).
    @discardableResult
    public func outboxReport(id: UInt64, status: Int, body: [UInt8] = []) async throws -> OutboxReport {
        let reference = try outbox.entries(ids: [id]).first?.item.reference
        let report = try await outbox.report(id: id, status: status, body: body)
        switch report.decision {
        case .delivered where report.kind == .rotation:
            if let friend = reference { _ = try await messages.queueRotationStatements(onlyFor: friend) }
        case .dropped where reference == OutboxManager.pushRenewalReference && (status == 400 || status == 404):
            try messages.forgetPushRegistration()
        default:
            break
        }
        return report
    }

    /// When to call ``outboxDue(now:ignoringBackoff:)`` next (ms since the epoch): the outbox's
    /// next attempt or the push registration's renewal, whichever is first; nil when neither.
    /// - Throws: store errors.
    public func outboxNextWake() throws -> UInt64? {
        [try outbox.nextWake(), try messages.pushRenewalAt()].compactMap { $0 }.min()
    }
}
