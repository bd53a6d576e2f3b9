import CoordsCore
import HummingbirdWebSocket
import Logging
import NIOWebSocket

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
        case .subscribed, .location, .deleted, .message:
            return .malformed("only subscribe and unsubscribe frames are accepted")
        }
    }

    private static func shortReason(_ error: any Error) -> String {
        String("\(error)".prefix(90))
    }

    /// Serves one upgraded live connection from `address` until either side closes: admits it
    /// against the live caps, writes queued frames, reads client frames, closes idle connections
    /// (4408), slow ones (4503) and refused frames with their code.
    func serveLive(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, address: String, logger: Logger) async throws {
        let subscriber: LiveHub.Subscriber
        do {
            subscriber = try live.connect(address: address)
        } catch {
            metrics.rejection("live_refused")
            try await outbound.close(.init(codeNumber: Int(error.code)), reason: error.reason)
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
        let ending = await withTaskGroup(of: Ending.self) { group -> Ending in
            group.addTask {  // writer: the hub's queue, in order
                for await text in subscriber.frames {
                    do { try await outbound.write(.text(text)) } catch { return .ended }
                }
                return subscriber.fellBehind ? .close(.fellBehind) : .ended
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
            try? await outbound.close(.goingAway, reason: "the relay is shutting down")
            return
        }
        switch ending {
        case .close(let close):
            metrics.connectionClosed("live_\(close.code)")
            try await outbound.close(.init(codeNumber: Int(close.code)), reason: close.reason)
        case .failed(let error):
            throw error  // the WebSocket layer closes with the protocol error's code (1002, 1009, …)
        case .ended:
            break
        }
    }
}
