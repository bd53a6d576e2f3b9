// JSON shapes of the C ABI (docs/ABI.md): snake_case keys, ids as base64url, times as integers.
import CCoordsABI
import CoordsCore

enum Record {
    static func location(_ l: Location) -> JSONValue {
        .object([
            "latitude": .double(l.latitude), "longitude": .double(l.longitude), "altitude": .double(l.altitude),
            "accuracy": .double(Double(l.accuracy)), "timestamp_ms": .integer(l.timestamp)
        ])
    }

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
            "conflict_keys": .array(f.conflictKeys.map { .string($0) })
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
            "id": .integer(e.id), "kind": .string(e.item.kind), "request": e.item.request.json,
            "attempts": .integer(UInt64(e.item.attempts)), "next_attempt_at": .integer(e.item.nextAttemptAt),
            "created_at": .integer(e.item.createdAt), "last_error": optional(e.item.lastError) { .string($0) },
            "reference": optional(e.item.reference) { .string($0) }, "location": optional(e.item.location, location)
        ])
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
        }
    }

    static func update(_ update: AppUpdate) -> JSONValue {
        var o = JSONObject()
        func set(_ manager: String, _ type: String) {
            o["manager"] = .string(manager)
            o["type"] = .string(type)
        }
        func failure(_ code: Int32, _ message: String) {
            o["code"] = .number(String(code))
            o["message"] = .string(message)
        }
        switch update {
        case .wallet(let m):
            switch m {
            case .identityCreated(let id):
                set("wallet", "identity_created")
                o["id"] = .string(id)
            case .identityImported(let id):
                set("wallet", "identity_imported")
                o["id"] = .string(id)
            case .backupRestored(let id, let count):
                set("wallet", "backup_restored")
                o["id"] = .string(id)
                o["friend_count"] = .integer(UInt64(count))
            case .profileChanged(let name, let server):
                set("wallet", "profile_changed")
                o["name"] = .string(name)
                o["server"] = .string(server)
            case .strictModeChanged(let strict):
                set("wallet", "strict_mode_changed")
                o["strict_mode"] = .bool(strict)
            case .identityRotated(let from, let to, let revoked):
                set("wallet", "identity_rotated")
                o["from"] = .string(from)
                o["to"] = .string(to)
                o["revoked"] = .bool(revoked)
            case .errorOccurred(let code, let message):
                set("wallet", "error_occurred")
                failure(code, message)
            }
        case .friends(let m):
            switch m {
            case .friendAdded(let f):
                set("friends", "friend_added")
                o["friend"] = friend(f)
            case .friendUpdated(let f):
                set("friends", "friend_updated")
                o["friend"] = friend(f)
            case .friendRemoved(let id):
                set("friends", "friend_removed")
                o["id"] = .string(id)
            case .errorOccurred(let code, let message):
                set("friends", "error_occurred")
                failure(code, message)
            }
        case .location(let m):
            switch m {
            case .uploadPrepared(let fix, let count):
                set("location", "upload_prepared")
                o["fix_timestamp"] = .integer(fix)
                o["recipient_count"] = .integer(UInt64(count))
            case .uploadSucceeded(let fix):
                set("location", "upload_succeeded")
                o["fix_timestamp"] = .integer(fix)
            case .uploadFailed(let fix, let reason):
                set("location", "upload_failed")
                o["fix_timestamp"] = .integer(fix)
                o["reason"] = .string(reason)
            case .fetchesPrepared(let count):
                set("location", "fetches_prepared")
                o["request_count"] = .integer(UInt64(count))
            case .locationsUpdated(let list):
                set("location", "locations_updated")
                o["locations"] = .array(list.map(friendLocation))
            case .entryRejected(let id, let code, let message):
                set("location", "entry_rejected")
                o["id"] = .string(id)
                failure(code, message)
            case .errorOccurred(let code, let message):
                set("location", "error_occurred")
                failure(code, message)
            }
        case .outbox(let m):
            switch m {
            case .queued(let id, let kind):
                set("outbox", "queued")
                o["id"] = .integer(id)
                o["kind"] = .string(kind)
            case .delivered(let id, let kind):
                set("outbox", "delivered")
                o["id"] = .integer(id)
                o["kind"] = .string(kind)
            case .retryScheduled(let id, let attempts, let next):
                set("outbox", "retry_scheduled")
                o["id"] = .integer(id)
                o["attempts"] = .integer(UInt64(attempts))
                o["next_attempt_at"] = .integer(next)
            case .removed(let id):
                set("outbox", "removed")
                o["id"] = .integer(id)
            case .errorOccurred(let code, let message):
                set("outbox", "error_occurred")
                failure(code, message)
            }
        case .messages(let m):
            switch m {
            case .messageQueued(let message):
                set("messages", "message_queued")
                o["message"] = Record.message(message)
            case .messageSent(let id):
                set("messages", "message_sent")
                o["id"] = .string(id)
            case .messagesReceived(let list):
                set("messages", "messages_received")
                o["messages"] = .array(list.map(Record.message))
            case .messageDelivered(let id):
                set("messages", "message_delivered")
                o["id"] = .string(id)
            case .messageRejected(let id, let code, let message):
                set("messages", "message_rejected")
                o["id"] = .string(id)
                failure(code, message)
            case .messagesExpired(let ids):
                set("messages", "messages_expired")
                o["ids"] = .array(ids.map { .string($0) })
            case .disappearingChanged(let friend, let seconds):
                set("messages", "disappearing_changed")
                o["friend_id"] = .string(friend)
                o["seconds"] = seconds.map { .integer($0) } ?? .null
            case .friendRotated(let from, let to, let name):
                set("messages", "friend_rotated")
                o["from"] = .string(from)
                o["to"] = .string(to)
                o["name"] = .string(name)
            case .friendConflict(let id, let name):
                set("messages", "friend_conflict")
                o["id"] = .string(id)
                o["name"] = .string(name)
            case .errorOccurred(let code, let message):
                set("messages", "error_occurred")
                failure(code, message)
            }
        }
        return .object(o)
    }
}
