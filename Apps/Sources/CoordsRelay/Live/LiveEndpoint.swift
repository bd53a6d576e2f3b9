import CoordsCore
import HummingbirdWebSocket
import Logging
import NIOWebSocket
import Synchronization

/// The relay's side of one live connection (PROTOCOL.md §8), independent of the socket: what a
/// client frame does. The WebSocket handler below feeds it; the fuzz target drives it directly.
extension RelayService {
    /// Handles one text frame from `subscriber`: subscribes (checking a mailbox proof against
    /// the §7.3 rules and the shared replay cache) or unsubscribes, and queues the `subscribed`
    /// answer. - Returns: the close to send when the frame is refused, nil otherwise.
    public func liveReceive(_ bytes: [UInt8], from subscriber: LiveHub.Subscriber) async -> LiveClose? {
        let frame: LiveFrame
        do {
            frame = try LiveFrame(parsing: bytes)
        } catch WireError.tooManyRecipients {
            return .tooManyIDs(configuration.live.maximumIDsPerConnection)
        } catch {
            return .malformed(Self.shortReason(error))
        }
        switch frame {
        case .subscribe(let ids, let proof):
            var recipient: String?
            if let proof {
                do {
                    try await acceptMailboxSignature(
                        key: proof.key, timestamp: proof.timestamp, signature: proof.signature, method: "GET", path: LiveFrame.path)
                    recipient = proof.recipientID
                } catch let failure as RelayFailure {
                    metrics.rejection("live_" + failure.code)
                    return LiveClose(4401, "mailbox proof refused: \(failure.code)")
                } catch {
                    logger.warning("live mailbox proof failed", metadata: ["error": "\(error)"])
                    return LiveClose(1011, "internal error")
                }
            }
            do {
                try live.subscribe(subscriber, ids: ids, mailbox: recipient)
            } catch {
                return error
            }
            return nil
        case .unsubscribe(let ids):
            live.unsubscribe(subscriber, ids: ids)
            return nil
        case .subscribed, .location, .deleted, .message, .changed:
            return .malformed("only subscribe and unsubscribe frames are accepted")
        }
    }

    /// Milliseconds from `origin` to now (monotonic).
    private static func milliseconds(since origin: ContinuousClock.Instant) -> Int64 {
        let elapsed = (ContinuousClock.now - origin).components
        return elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
    }

    private static func shortReason(_ error: any Error) -> String {
        String("\(error)".prefix(90))
    }

    /// Serves one upgraded live connection from `address` until either side closes: admits it
    /// against the live caps, writes queued frames, reads client frames, closes idle connections
    /// (4408), slow ones (4503) and refused frames with their code. A frame or close that cannot
    /// be written within ``LiveLimits/writeTimeoutSeconds`` (a client that stopped reading) calls
    /// `drop`, which closes the socket without a handshake; so does every ending after that
    /// grace, so no connection outlives its end by more than the write timeout.
    func serveLive(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, address: String, logger: Logger,
        drop: @escaping @Sendable () -> Void = {}
    ) async throws {
        let writeTimeout = Duration.seconds(Int64(clamping: configuration.live.writeTimeoutSeconds))
        /// Runs `write`; false (and the socket dropped) when it did not finish in time.
        @Sendable func withinDeadline(_ write: @escaping @Sendable () async throws -> Void) async -> Bool {
            await withTaskGroup(of: Bool.self) { group in
                group.addTask { (try? await write()) != nil }  // a failed write means the socket is gone: drop it
                group.addTask {
                    try? await Task.sleep(for: writeTimeout)  // cancelled when the write finished first
                    return Task.isCancelled
                }
                let first = await group.next() ?? false
                group.cancelAll()
                if !first { drop() }
                return first
            }
        }
        defer {
            // Whatever ended the connection, the socket is gone a write timeout later at the latest.
            Task {
                try? await Task.sleep(for: writeTimeout)  // cancelled only at shutdown, which drops it anyway
                drop()
            }
        }
        let subscriber: LiveHub.Subscriber
        do {
            subscriber = try live.connect(address: address)
        } catch {
            metrics.rejection("live_refused")
            _ = await withinDeadline { try await outbound.close(.init(codeNumber: Int(error.code)), reason: error.reason) }
            return
        }
        metrics.liveConnections.increment()
        defer { live.disconnect(subscriber) }
        enum Ending: Sendable {
            case close(LiveClose)
            case failed(any Error)
            case ended
        }
        let idle = Duration.seconds(Int64(clamping: configuration.live.idleTimeoutSeconds))
        let origin = ContinuousClock.now
        let writing = WriteStart()
        let ending = await withTaskGroup(of: Ending.self) { group -> Ending in
            group.addTask {  // writer: the hub's queue, in order
                for await text in subscriber.frames {
                    writing.since.store(Self.milliseconds(since: origin), ordering: .releasing)
                    defer { writing.since.store(-1, ordering: .releasing) }
                    do { try await outbound.write(.text(text)) } catch { return .ended }
                }
                return subscriber.fellBehind ? .close(.fellBehind) : .ended
            }
            group.addTask {  // write watchdog: a write stuck past the timeout drops the socket
                let limit = Int64(clamping: self.configuration.live.writeTimeoutSeconds).multipliedReportingOverflow(by: 1000).partialValue
                while true {
                    do { try await Task.sleep(for: .seconds(1)) } catch { return .ended }
                    let since = writing.since.load(ordering: .acquiring)
                    if since >= 0, Self.milliseconds(since: origin) - since > limit {
                        self.metrics.connectionClosed("live_write_timeout")
                        drop()
                        return .ended
                    }
                }
            }
            group.addTask {  // idle: a connection found watching nothing at a check is closed
                while true {
                    do { try await Task.sleep(for: idle) } catch { return .ended }
                    if !self.live.isWatching(subscriber) { return .close(.idle) }
                }
            }
            group.addTask {  // reader
                do {
                    for try await message in inbound.messages(maxSize: LiveFrame.maximumFrameBytes) {
                        guard case .text(let text) = message else { return .close(.binary) }
                        if let close = await self.liveReceive(Array(text.utf8), from: subscriber) { return .close(close) }
                    }
                    return .ended
                } catch {
                    return .failed(error)
                }
            }
            let first = await group.next() ?? .ended
            group.cancelAll()
            return first
        }
        if Task.isCancelled {  // the relay is shutting down: clients reconnect (to this node or another)
            _ = await withinDeadline { try await outbound.close(.goingAway, reason: "the relay is shutting down") }
            return
        }
        switch ending {
        case .close(let close):
            metrics.connectionClosed("live_\(close.code)")
            _ = await withinDeadline { try await outbound.close(.init(codeNumber: Int(close.code)), reason: close.reason) }
        case .failed(let error):
            throw error  // the WebSocket layer closes with the protocol error's code (1002, 1009, …)
        case .ended:
            break
        }
    }
}

/// When the write under way on a live connection began (ms since the connection opened; -1 when
/// none is), shared by the writer and its watchdog.
private final class WriteStart: Sendable {
    let since = Atomic<Int64>(-1)
}
