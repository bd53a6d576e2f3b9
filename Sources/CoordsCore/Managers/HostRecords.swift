/// The one JSON shape of each record a host sees — the C ABI's records (docs/ABI.md), the CLI's
/// `--json` (docs/CLI.md) and, through the C ABI, the Python and every other binding. One builder
/// per record type, one naming: snake_case keys, ids as base64url, and every unit in its key's name
/// — times in milliseconds since the epoch (`_ms`), lengths in metres (`_m`), angles in degrees.
extension Location {
    /// `{"latitude","longitude","altitude_m","accuracy_m","timestamp_ms"}`: degrees, metres, ms.
    public var hostJSON: JSONValue {
        .object([
            "latitude": .double(latitude), "longitude": .double(longitude), "altitude_m": .double(altitude),
            "accuracy_m": .double(Double(accuracy)), "timestamp_ms": .integer(timestamp)
        ])
    }
}

extension MessageRecord {
    /// `{"id","friend_id","outgoing","kind","text","sent_at_ms","stored_at_ms","status",
    /// "disappears_at_ms","group","notify","file"}` (`file`: ``FileAttachment/hostJSON``, never its key).
    public var hostJSON: JSONValue {
        .object([
            "id": .string(id), "friend_id": .string(peer), "outgoing": .bool(outgoing), "kind": .string(kind),
            "text": .string(text), "sent_at_ms": .integer(sentAt), "stored_at_ms": .integer(storedAt),
            "status": .string(status.rawValue), "disappears_at_ms": disappearsAt.map { .integer($0) } ?? .null,
            "group": group.map { .string($0) } ?? .null, "notify": notify.map { .bool($0) } ?? .null,
            "file": file?.hostJSON ?? .null
        ])
    }
}

extension GroupInfo {
    /// `{"id","name","status","is_admin","in_conflict","epoch","sharing","members":[{"id","name",
    /// "is_admin","is_self","is_friend"}]}`.
    public var hostJSON: JSONValue {
        .object([
            "id": .string(id), "name": .string(name), "status": .string(status.rawValue), "is_admin": .bool(isAdmin),
            "in_conflict": .bool(inConflict), "epoch": .integer(UInt64(epoch)), "sharing": .bool(sharing),
            "members": .array(
                members.map { m in
                    .object([
                        "id": .string(m.id), "name": m.name.map { .string($0) } ?? .null, "is_admin": .bool(m.isAdmin),
                        "is_self": .bool(m.isSelf), "is_friend": .bool(m.isFriend)
                    ])
                })
        ])
    }
}
