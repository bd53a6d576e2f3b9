import CoordsCore

/// The CLI's side of the live channel (PROTOCOL.md §8): one WebSocket per relay, driven by the
/// core's ``LiveSession`` — it says where to connect, what to send, what each frame means and
/// when to reconnect; this type only moves bytes. Positions arrive through the same checks and
/// cache as a fetch; a message notice triggers a mailbox sync.
struct LiveWatcher: Sendable {
    let session: Session
    /// A friend's position changed (or a notice was refused): the processed outcome.
    let onLocations: @Sendable (FetchOutcome) async -> Void
    /// New messages were fetched after a notice.
    let onMessages: @Sendable (MessagesOutcome) async -> Void
    /// A line about the connections themselves (connected, polling, reconnecting).
    let onStatus: @Sendable (String) -> Void

    /// Holds a connection to every relay until cancelled. A relay without the live channel (404)
    /// is reported once and left to the caller's polling.
    func run() async throws {
        let connections = try session.app.live.connections()
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask { await self.hold(connection) }
            }
        }
    }

    private func hold(_ connection: LiveSession.Connection) async {
        let live = session.app.live
        while !Task.isCancelled {
            var code: Int?
            var upgradeStatus: Int?
            do {
                let opened = try live.opened(server: connection.server)
                let close = try await withThrowingTaskGroup(of: Void.self) { mailbox in
                    defer { mailbox.cancelAll() }
                    return try await LiveSocket.run(url: connection.url, opening: opened.frames) { text in
                        let event = try await live.process(server: connection.server, frame: text)
                        if case .messageWaiting(_, let fetch) = event {
                            // The burst's fetches run beside the socket, so notices arriving meanwhile coalesce.
                            mailbox.addTask { await self.syncMailbox(fetch, connection) }
                        } else {
                            try await self.handle(event, connection, opened)
                        }
                    }
                }
                code = close?.code
                let reason = close?.reason.map { ": \($0)" } ?? ""
                onStatus("Live connection to \(connection.server) closed (\(code.map(String.init) ?? "no close frame")\(reason)); reconnecting.")
            } catch LiveSocket.Failure.notUpgraded {
                upgradeStatus = await Self.probe(connection.server)
                if upgradeStatus != 404 { onStatus("Live channel of \(connection.server) refused the upgrade (HTTP \(upgradeStatus ?? 0)).") }
            } catch is CancellationError {
                live.stopped(server: connection.server)  // the one wake fetches from this relay again
                return
            } catch {
                onStatus("Live connection to \(connection.server) failed: \(describe(error)).")
            }
            switch live.closed(server: connection.server, code: code, upgradeStatus: upgradeStatus) {
            case .poll:
                onStatus("\(connection.server) has no live channel; polling it.")
                return
            case .reconnect(let milliseconds):
                do { try await Waiting.sleep(milliseconds: Int64(clamping: milliseconds)) } catch { return }
            }
        }
    }

    /// Performs a message notice's mailbox fetch, and one more for as long as the core says notices
    /// arrived meanwhile (one signed request per burst, PROTOCOL.md §8.5).
    /// A failure is reported and ends the burst; the next notice (or the reconnect's catch-up) fetches again.
    private func syncMailbox(_ first: PreparedRequest, _ connection: LiveSession.Connection) async {
        var fetch: PreparedRequest? = first
        var started: UInt64 = 0
        while let next = fetch, !Task.isCancelled {
            // §8.5: a burst's next fetch starts at least a second after the one before it began.
            let wait = started.addingSaturating(LiveSession.burstFetchGap).subtractingSaturating(nowMilliseconds())
            if started != 0, wait > 0 {
                do { try await Waiting.sleep(milliseconds: Int64(clamping: wait)) } catch { return }
            }
            started = nowMilliseconds()
            do {
                await onMessages(try await MessageDelivery.sync(session, fetch: next))
            } catch {
                onStatus("Live: fetching your mailbox from \(connection.server) failed: \(describe(error)).")
            }
            do {
                fetch = try session.app.live.mailboxFetched(server: connection.server)
            } catch {
                onStatus("Live: cannot prepare the next mailbox fetch: \(describe(error)).")
                fetch = nil
            }
        }
    }

    /// Performs one of the core's prepared location fetches (a catch-up, or a `changed` notice's)
    /// and processes the answer; a relay that fails or refuses is reported, never fatal to the
    /// connection. The outcome is empty then.
    private func fetchLocations(_ fetch: RelayAPI.PreparedFetch) async -> FetchOutcome {
        do {
            let result = try await RelayHTTP.send(fetch.request)
            guard result.status == 200 else {
                onStatus("Live: " + RelayHTTP.refusal(result, action: "answer the fetch") + ".")
                return FetchOutcome()
            }
            return try await session.app.location.processFetchResponse(result.body)
        } catch {
            onStatus("Live: fetching from \(fetch.server) failed: \(describe(error)).")
            return FetchOutcome()
        }
    }

    /// One processed frame. After the relay confirmed the subscriptions, the catch-up fetch runs
    /// (so nothing published while disconnected is missed).
    private func handle(_ event: LiveSession.Event, _ connection: LiveSession.Connection, _ opened: LiveSession.Opened) async throws {
        switch event {
        case .subscribed(let ids, let mailbox):
            onStatus("Live: watching \(ids) friend\(ids == 1 ? "" : "s")\(mailbox ? " and your mailbox" : "") on \(connection.server).")
            var outcome = FetchOutcome()
            for fetch in opened.catchUp { outcome.merge(await fetchLocations(fetch)) }
            if !outcome.updated.isEmpty || !outcome.rejected.isEmpty { await onLocations(outcome) }
            if let fetch = opened.mailboxFetch {
                do {
                    let messages = try await MessageDelivery.sync(session, fetch: fetch)
                    if !messages.received.isEmpty { await onMessages(messages) }
                } catch {
                    onStatus("Live: fetching your mailbox from \(connection.server) failed: \(describe(error)).")
                }
            }
        case .locations(let outcome):
            if !outcome.updated.isEmpty || !outcome.rejected.isEmpty { await onLocations(outcome) }
        case .changed(_, let fetch):
            let outcome = await fetchLocations(fetch)
            if !outcome.updated.isEmpty || !outcome.rejected.isEmpty { await onLocations(outcome) }
        case .rejected(let rejection):
            var outcome = FetchOutcome()
            outcome.rejected = [rejection]
            await onLocations(outcome)
        case .messageWaiting, .deleted, .ignored:
            break
        }
    }

    /// The status a plain `GET /v1/relay/live` gets: 426 from a relay with the channel, 404 from
    /// one without (a reference relay), nil when unreachable.
    static func probe(_ server: String) async -> Int? {
        // An invalid server has no live channel: nil, like an unreachable one.
        guard let url = try? RelayAPI.endpoint(server: server, path: LiveFrame.path) else { return nil }
        // Unreachable is nil by this function's contract.
        return try? await RelayHTTP.send(PreparedRequest(url: url, method: "GET", headers: [], body: []), timeout: 5).status
    }
}
