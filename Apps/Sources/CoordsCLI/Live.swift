import CoordsCore
import HummingbirdWSClient
import Logging
import NIOWebSocket

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

    private static let logger: Logger = {
        var logger = Logger(label: "coords.live")
        logger.logLevel = .critical
        return logger
    }()

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
                let close = try await WebSocketClient.connect(url: connection.url, logger: Self.logger) { inbound, outbound, _ in
                    let opened = try live.opened(server: connection.server)
                    for frame in opened.frames { try await outbound.write(.text(frame)) }
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        try await self.handle(try await live.process(server: connection.server, frame: Array(text.utf8)), connection, opened)
                    }
                }
                code = close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }
                let reason = close?.reason.map { ": \($0)" } ?? ""
                onStatus("Live connection to \(connection.server) closed (\(code.map(String.init) ?? "no close frame")\(reason)); reconnecting.")
            } catch let error as WebSocketClientError where error == .webSocketUpgradeFailed {
                upgradeStatus = await Self.probe(connection.server)
                if upgradeStatus != 404 { onStatus("Live channel of \(connection.server) refused the upgrade (HTTP \(upgradeStatus ?? 0)).") }
            } catch is CancellationError {
                return
            } catch {
                onStatus("Live connection to \(connection.server) failed: \(describe(error)).")
            }
            switch live.closed(server: connection.server, code: code, upgradeStatus: upgradeStatus) {
            case .poll:
                onStatus("\(connection.server) has no live channel; polling it.")
                return
            case .reconnect(let milliseconds):
                do { try await Task.sleep(for: .milliseconds(Int64(clamping: milliseconds))) } catch { return }
            }
        }
    }

    /// One processed frame. After the relay confirmed the subscriptions, the catch-up fetch runs
    /// (so nothing published while disconnected is missed).
    private func handle(_ event: LiveSession.Event, _ connection: LiveSession.Connection, _ opened: LiveSession.Opened) async throws {
        switch event {
        case .subscribed(let ids, let mailbox):
            onStatus("Live: watching \(ids) friend\(ids == 1 ? "" : "s")\(mailbox ? " and your mailbox" : "") on \(connection.server).")
            var outcome = FetchOutcome()
            for fetch in opened.catchUp {
                if let result = try? await RelayHTTP.send(fetch.request), result.status == 200 {
                    outcome.merge(try await session.app.location.processFetchResponse(result.body))
                }
            }
            if !outcome.updated.isEmpty || !outcome.rejected.isEmpty { await onLocations(outcome) }
            if opened.mailboxFetch != nil, let messages = try? await MessageDelivery.sync(session), !messages.received.isEmpty {
                await onMessages(messages)
            }
        case .locations(let outcome):
            if !outcome.updated.isEmpty || !outcome.rejected.isEmpty { await onLocations(outcome) }
        case .messageWaiting:
            await onMessages(try await MessageDelivery.sync(session))
        case .rejected(let rejection):
            var outcome = FetchOutcome()
            outcome.rejected = [rejection]
            await onLocations(outcome)
        case .deleted, .ignored:
            break
        }
    }

    /// The status a plain `GET /v1/relay/live` gets: 426 from a relay with the channel, 404 from
    /// one without (a reference relay), nil when unreachable.
    static func probe(_ server: String) async -> Int? {
        guard let url = try? RelayAPI.endpoint(server: server, path: LiveFrame.path) else { return nil }
        return try? await RelayHTTP.send(PreparedRequest(url: url, method: "GET", headers: [], body: []), timeout: 5).status
    }
}
