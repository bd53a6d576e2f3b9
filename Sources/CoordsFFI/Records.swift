// JSON shapes of the C ABI (docs/ABI.md): snake_case keys, ids as base64url, times as integers.
import CCoordsABI
import CoordsCore

enum Record {
    static func location(_ l: Location) -> JSONValue { l.hostJSON }

    static func cLocation(_ l: Location) -> CoordsLocation {
        CoordsLocation(latitude: l.latitude, longitude: l.longitude, altitude: l.altitude, accuracy: l.accuracy, timestamp_ms: l.timestamp)
    }

    static func optional<T>(_ value: T?, _ transform: (T) -> JSONValue) -> JSONValue {
        value.map(transform) ?? .null
    }

    static func error(_ error: any CoordsCoreError) -> JSONValue {
        .object(["code": .number(String(error.code)), "message": .string(error.description)])
    }

    static func request(_ r: PreparedRequest) -> JSONValue { r.json }

    static func fetch(_ f: RelayAPI.PreparedFetch) -> JSONValue {
        var object = f.request.json.objectValue ?? JSONObject()
        object["server"] = .string(f.server)
        object["ids"] = .array(f.ids.map { .string($0) })
        return .object(object)
    }

    static func fetchEntry(_ e: RelayAPI.FetchEntry) -> JSONValue {
        .object([
            "pubkey": .string(e.id),
            "location": optional(e.location, location),
            "updated": optional(e.updated) { .integer($0) },
            "upload_timestamp": optional(e.uploadTimestamp) { .integer($0) },
            "authenticity": .string(e.authenticity.rawValue),
            "error": optional(e.error) { error($0) }
        ])
    }

    static func friend(_ f: Friend) -> JSONValue {
        .object([
            "id": .string(f.id), "name": .string(f.name), "server": .string(f.server),
            "share_with": .bool(f.shareWith), "fetch_from": .bool(f.fetchFrom), "added_at": .integer(f.addedAt),
            "trust": .string(f.trust.rawValue), "marker_color": .string(f.markerColor),
            "sharing": .string(f.sharing.rawValue), "share_until": optional(f.shareUntil) { .integer($0) },
            "conflict_keys": .array(f.conflictKeys.map { .string($0) }), "protection": .string(f.protection.rawValue),
            "reciprocal": .bool(f.reciprocal)
        ])
    }

    static func friendLocation(_ f: FriendLocation) -> JSONValue {
        .object([
            "id": .string(f.id), "name": .string(f.name), "location": optional(f.location, location),
            "updated": optional(f.updated) { .integer($0) }, "fetched_at": optional(f.fetchedAt) { .integer($0) },
            "authenticity": optional(f.authenticity) { .string($0.rawValue) }, "marker_color": .string(f.markerColor),
            "place": optional(f.place) { place($0, accuracyMetres: Double(f.location?.accuracy ?? 0)) }
        ])
    }

    static func place(_ p: Place, accuracyMetres: Double) -> JSONValue {
        .object([
            "name": .string(p.name), "country_code": optional(p.countryCode) { .string($0) },
            "country": optional(p.countryName) { .string($0) }, "state": optional(p.stateName) { .string($0) },
            "population": .integer(UInt64(p.population)), "latitude": .double(p.latitude), "longitude": .double(p.longitude),
            "distance_km": .double(p.distanceKm), "display": .string(p.displayName), "phrase": .string(p.phrase(accuracyMetres: accuracyMetres))
        ])
    }

    static func upload(_ u: PreparedUpload) -> JSONValue {
        .object([
            "request": u.request.json, "fix_timestamp": .integer(u.fixTimestamp), "upload_timestamp": .integer(u.uploadTimestamp),
            "recipient_count": .integer(UInt64(u.recipientCount)), "blob_size": .integer(UInt64(u.blobByteCount))
        ])
    }

    static func outboxEntry(_ e: OutboxEntry) -> JSONValue {
        .object([
            "id": .integer(e.id), "kind": .string(e.item.kind.rawValue), "request": e.item.request.json,
            "attempts": .integer(UInt64(e.item.attempts)), "next_attempt_at": .integer(e.item.nextAttemptAt),
            "created_at": .integer(e.item.createdAt), "last_error": optional(e.item.lastError) { .string($0) },
            "reference": optional(e.item.reference) { .string($0) }, "location": optional(e.item.location, location)
        ])
    }

    static func outboxReport(_ r: OutboxReport) -> JSONValue {
        var fields: [(String, JSONValue)] = [("id", .integer(r.id)), ("kind", optional(r.kind) { .string($0.rawValue) })]
        switch r.decision {
        case .delivered: fields.append(("decision", .string("delivered")))
        case .retry(let at, let reason): fields += [("decision", .string("retry")), ("at", .integer(at)), ("reason", .string(reason))]
        case .signAgain(let at, let reason):
            fields += [("decision", .string("sign_again")), ("at", .integer(at)), ("reason", .string(reason))]
        case .dropped(let reason): fields += [("decision", .string("dropped")), ("reason", .string(reason))]
        case .unknown: fields.append(("decision", .string("unknown")))
        }
        return .object(JSONObject(fields))
    }

    static func outcome(_ o: FetchOutcome) -> JSONValue {
        .object([
            "updated": .array(o.updated.map(friendLocation)),
            "unchanged": .array(o.unchanged.map { .string($0) }),
            "rejected": .array(o.rejected.map { .object(["id": .string($0.id), "error": error($0.error)]) }),
            "ignored": .array(o.ignored.map { .string($0) })
        ])
    }

    static func liveConnection(_ c: LiveSession.Connection) -> JSONValue {
        .object(["server": .string(c.server), "url": .string(c.url), "ids": .array(c.ids.map { .string($0) }), "mailbox": .bool(c.mailbox)])
    }

    static func liveOpened(_ o: LiveSession.Opened) -> JSONValue {
        .object([
            "frames": .array(o.frames.map { .string($0) }), "catch_up": .array(o.catchUp.map(fetch)),
            "mailbox_fetch": optional(o.mailboxFetch, request)
        ])
    }

    static func liveEvent(_ e: LiveSession.Event) -> JSONValue {
        switch e {
        case .subscribed(let ids, let mailbox):
            .object(["type": .string("subscribed"), "ids": .integer(UInt64(clamping: ids)), "mailbox": .bool(mailbox)])
        case .locations(let o): .object(["type": .string("locations"), "outcome": outcome(o)])
        case .deleted(let id): .object(["type": .string("deleted"), "id": .string(id)])
        case .rejected(let r): .object(["type": .string("rejected"), "id": .string(r.id), "error": error(r.error)])
        case .messageWaiting(let id, let fetch): .object(["type": .string("message_waiting"), "id": .string(id), "fetch": request(fetch)])
        case .ignored(let id): .object(["type": .string("ignored"), "id": .string(id)])
        case .changed(let id, let fetch): .object(["type": .string("changed"), "id": .string(id), "fetch": self.fetch(fetch)])
        }
    }

    /// An update as the C ABI reports it: `manager` (the message type's own name, the one its logs
    /// use), `type`, then the message's own fields (docs/ABI.md "Update types"). Each manager's
    /// message says its type and fields next to that manager's exports.
    static func update(_ update: AppUpdate) -> JSONValue {
        let (manager, record): (String, UpdateRecord) =
            switch update {
            case .wallet(let m): (type(of: m).manager, m.record)
            case .friends(let m): (type(of: m).manager, m.record)
            case .location(let m): (type(of: m).manager, m.record)
            case .outbox(let m): (type(of: m).manager, m.record)
            case .messages(let m): (type(of: m).manager, m.record)
            case .groups(let m): (type(of: m).manager, m.record)
            }
        return .object(JSONObject([("manager", .string(manager)), ("type", .string(record.type))] + record.fields))
    }
}

/// One manager message as an update record: its `type` and its fields, in the order they are written.
struct UpdateRecord {
    var type: String
    var fields: [(String, JSONValue)]

    init(_ type: String, _ fields: KeyValuePairs<String, JSONValue> = [:]) {
        self.type = type
        self.fields = fields.map { ($0.key, $0.value) }
    }

    /// A failure: `error_occurred {code, message}`, or `type {id, code, message}` for one refused entry.
    static func failure(_ code: Int32, _ message: String, type: String = "error_occurred", id: String? = nil) -> UpdateRecord {
        var record = UpdateRecord(type, ["code": .number(String(code)), "message": .string(message)])
        if let id { record.fields.insert(("id", .string(id)), at: 0) }
        return record
    }
}
