import CoordsCore
import Logging
import ServiceLifecycle

/// What one relay node tells the others sharing its PostgreSQL database about an accepted write
/// (PROTOCOL.md §8.6), as the text of a `NOTIFY coords_live`: `<node> l <id>`,
/// `<node> d <id> <timestamp> <signature b64u>` or `<node> m <recipient hex> <envelope id>`.
/// A location carries only the key: a node with subscribers for it reads the record itself (a
/// blob may exceed NOTIFY's 8,000-byte limit).
enum LiveAnnouncement: Sendable, Equatable {
    case location(id: String)
    case deleted(id: String, timestamp: UInt64, signature: [UInt8])
    case message(recipient: String, id: String)

    func payload(from node: String) -> String {
        switch self {
        case .location(let id): "\(node) l \(id)"
        case .deleted(let id, let timestamp, let signature): "\(node) d \(id) \(timestamp) \(Base64.encode(signature))"
        case .message(let recipient, let id): "\(node) m \(recipient) \(id)"
        }
    }

    /// Parses a payload; nil for anything malformed (another version's, or garbage).
    static func parse(_ payload: String) -> (node: String, announcement: LiveAnnouncement)? {
        let parts = payload.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts.count <= 5 else { return nil }
        switch (parts[1], parts.count) {
        case ("l", 3) where LiveFrame.isKeyShaped(parts[2]):
            return (parts[0], .location(id: parts[2]))
        case ("d", 5) where LiveFrame.isKeyShaped(parts[2]):
            // An announcement from another node that does not parse is dropped (logged below).
            guard let timestamp = UInt64(parts[3]), let signature = try? Base64.decode(parts[4], field: "signature"), signature.count == 64 else {
                return nil
            }
            return (parts[0], .deleted(id: parts[2], timestamp: timestamp, signature: signature))
        case ("m", 4) where parts[2].utf8.count == 64 && parts[3].utf8.count <= 64:
            return (parts[0], .message(recipient: parts[2], id: parts[3]))
        default:
            return nil
        }
    }
}

/// Brings the other nodes' announcements to this node's subscribers: runs while the relay runs,
/// on stores shared between nodes (PostgreSQL).
struct LiveBridge: Service {
    let service: RelayService
    let announcements: AsyncStream<String>

    func run() async throws {
        // Ends on graceful shutdown (the stream's iteration stops when its task is cancelled).
        await cancelWhenGracefulShutdown {
            for await payload in announcements {
                await relay(payload)
            }
        }
    }

    /// Publishes one announcement from another node to this node's subscribers.
    func relay(_ payload: String) async {
        guard let (node, announcement) = LiveAnnouncement.parse(payload), node != service.nodeID else { return }
        switch announcement {
        case .location(let id):
            // Ids were checked key-shaped when announced; nobody watching, or not a key: nothing to push.
            guard service.live.isWatched(key: id), let key = try? Bytes32(try Base64.decode(id, field: "id")) else { return }
            let since = service.nowSeconds.subtractingSaturating(service.configuration.ttlSeconds)
            // A notice is a hint: if the store cannot say now, watchers still get the position at their next fetch.
            guard let record = try? await service.store.get(keys: [key], updatedSince: since)[key] else { return }
            service.live.publish(
                .location(.init(id: id, blob: record.blob, updated: record.updated, timestamp: record.timestamp, signature: record.signature)),
                key: id)
        case .deleted(let id, let timestamp, let signature):
            service.live.publish(.deleted(id: id, timestamp: timestamp, signature: signature), key: id)
        case .message(let recipient, let id):
            service.live.publish(.message(id: id), mailbox: recipient)
        }
    }
}
