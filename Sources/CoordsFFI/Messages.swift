import CCoordsABI
import CoordsCore

extension Record {
    static func message(_ m: MessageRecord) -> JSONValue { m.hostJSON }

    static func notificationPolicy(_ p: NotificationPolicy) -> JSONValue {
        .object([
            "quiet_hours": optional(p.quietHours) { hours in
                .object([
                    "start_minute": .integer(Int64(hours.start)), "end_minute": .integer(Int64(hours.end)),
                    "utc_offset_minutes": .integer(Int64(hours.utcOffsetMinutes)), "text": .string(hours.description)
                ])
            },
            "delivery_receipts": .bool(p.deliveryReceipts)
        ])
    }

    static func messagesOutcome(_ o: MessagesOutcome) -> JSONValue {
        .object([
            "received": .array(o.received.map(message)), "delivered": .array(o.delivered.map { .string($0) }),
            "duplicates": .array(o.duplicates.map { .string($0) }),
            "rejected": .array(
                o.rejected.map { .object(["id": .string($0.id), "error": .object(["code": .number(String($0.code)), "message": .string($0.reason)])]) }),
            "acks": .array(o.acks.map(\.json)), "receipts": .array(o.receipts.map(outboxEntry)),
            "rotated": .array(o.rotated.map { .string($0) }), "conflicts": .array(o.conflicts.map { .string($0) }),
            "resets": .array(o.resets.map { .string($0) }), "broken": .array(o.broken.map { .string($0) }),
            "waiting": .array(o.waiting.map { .string($0) }), "group_queued": .array(o.groupQueued.map(outboxEntry)),
            "more": .bool(o.more)
        ])
    }

    static func conversation(_ c: Conversation) -> JSONValue {
        .object([
            "friend_id": .string(c.friendID), "name": .string(c.name), "last_message": optional(c.lastMessage, message),
            "message_count": .integer(UInt64(c.messageCount)),
            "disappear_after_seconds": optional(c.disappearAfterSeconds) { .integer($0) }
        ])
    }
}

// MARK: Stateless envelopes

@_cdecl("coords_envelope_seal")
public func ffiEnvelopeSeal(
    _ seed: UnsafePointer<UInt8>?, _ recipient: UnsafePointer<UInt8>?, _ payload: UnsafePointer<UInt8>?,
    _ payloadLength: Int, _ createdAt: UInt64, _ ttl: UInt64, _ envelopeOut: BufferOut,
    _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(envelopeOut, "envelope_json_out")
        let sender = try Argument.identity(seed)
        let key = try Argument.publicKey(recipient, "recipient_public")
        let bytes = try Argument.bytes(payload, payloadLength, "payload", maximum: Envelope.maximumPayloadBytes - 60)
        guard ttl > 0, ttl <= 30 * 86_400 else { throw FFIError.invalid("ttl_seconds must be 1…2592000") }
        guard createdAt <= UInt64(Int64.max) - ttl else { throw FFIError.invalid("created_at is out of range") }
        let envelope = try Envelope.seal(bytes, id: try Envelope.newUUID(), from: sender, to: key, createdAt: createdAt, expiresAt: createdAt + ttl)
        try Output.write(envelope.json, to: out)
    }
}

@_cdecl("coords_envelope_open")
public func ffiEnvelopeOpen(
    _ seed: UnsafePointer<UInt8>?, _ sender: UnsafePointer<UInt8>?, _ envelopeJSON: CString, _ now: UInt64, _ payloadOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(payloadOut, "payload_out")
        let reader = try Argument.identity(seed)
        let key = try Argument.publicKey(sender, "sender_public")
        let envelope = try Envelope(json: try Argument.json(envelopeJSON, "envelope_json"))
        try Output.write(try envelope.open(as: reader, from: key, now: now), to: out)
    }
}

// MARK: Messages manager

extension MessagesManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .messageQueued(let message): UpdateRecord("message_queued", ["message": Record.message(message)])
        case .messageSent(let id): UpdateRecord("message_sent", ["id": .string(id)])
        case .messagesReceived(let list): UpdateRecord("messages_received", ["messages": .array(list.map(Record.message))])
        case .messageDelivered(let id): UpdateRecord("message_delivered", ["id": .string(id)])
        case .messageRejected(let id, let code, let message): .failure(code, message, type: "message_rejected", id: id)
        case .messagesExpired(let ids): UpdateRecord("messages_expired", ["ids": .array(ids.map { .string($0) })])
        case .disappearingChanged(let friend, let seconds):
            UpdateRecord("disappearing_changed", ["friend_id": .string(friend), "seconds": seconds.map { .integer($0) } ?? .null])
        case .friendRotated(let from, let to, let name): UpdateRecord("friend_rotated", ["from": .string(from), "to": .string(to), "name": .string(name)])
        case .friendConflict(let id, let name): UpdateRecord("friend_conflict", ["id": .string(id), "name": .string(name)])
        case .sessionReset(let id, let name): UpdateRecord("session_reset", ["friend_id": .string(id), "name": .string(name)])
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

@_cdecl("coords_messages_send")
public func ffiMessagesSend(_ handle: Handle, _ friendID: CString, _ text: CString, _ sentOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(sentOut, "sent_json_out", app: handle, error) { app in
        let friend = try Argument.string(friendID, "friend_id")
        let body = try Argument.string(text, "text")
        let sent = try blocking { try await app.messages.send(body, to: friend) }
        return JSONValue.object([
            "message": Record.message(sent.message), "request": sent.request.json,
            "outbox_id": .integer(sent.outboxID)
        ])
    }
}

@_cdecl("coords_messages_mark_sent")
public func ffiMessagesMarkSent(_ handle: Handle, _ messageID: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let id = try Argument.string(messageID, "message_id")
        try blocking { try await app.messages.markSent(id: id) }
    }
}

@_cdecl("coords_messages_prepare_fetch")
public func ffiMessagesPrepareFetch(_ handle: Handle, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in try app.messages.prepareFetch().json }
}

@_cdecl("coords_messages_prepare_push_register")
public func ffiMessagesPreparePushRegister(_ handle: Handle, _ endpoint: CString, _ ttlSeconds: UInt64, _ requestOut: BufferOut, _ error: ErrorOut)
    -> Int32
{
    returning(requestOut, "request_json_out", app: handle, error) { app in
        let endpoint = try Argument.string(endpoint, "endpoint")
        return try app.messages.preparePushRegistration(endpoint: endpoint, ttlSeconds: ttlSeconds == 0 ? nil : ttlSeconds).json
    }
}

@_cdecl("coords_messages_prepare_push_unregister")
public func ffiMessagesPreparePushUnregister(_ handle: Handle, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in try app.messages.preparePushUnregistration().json }
}

@_cdecl("coords_messages_process_fetch_response")
public func ffiMessagesProcessFetchResponse(
    _ handle: Handle, _ body: UnsafePointer<UInt8>?, _ length: Int, _ outcomeOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    processingResponse(handle, body, length, outcomeOut, error) { app, bytes in Record.messagesOutcome(try await app.messages.processFetchResponse(bytes)) }
}

@_cdecl("coords_messages_conversations")
public func ffiMessagesConversations(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in JSONValue.array(try app.messages.conversations().map(Record.conversation)) }
}

@_cdecl("coords_messages_history")
public func ffiMessagesHistory(_ handle: Handle, _ friendID: CString, _ limit: UInt32, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        let history = try app.messages.history(with: try Argument.string(friendID, "friend_id"), limit: limit == 0 ? nil : Int(limit))
        return JSONValue.array(history.map(Record.message))
    }
}

@_cdecl("coords_messages_set_disappearing")
public func ffiMessagesSetDisappearing(_ handle: Handle, _ friendID: CString, _ seconds: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let friend = try Argument.string(friendID, "friend_id")
        try blocking { try await app.messages.setDisappearing(friendID: friend, after: seconds == 0 ? nil : seconds) }
    }
}

@_cdecl("coords_messages_next_expiry")
public func ffiMessagesNextExpiry(_ handle: Handle, _ atOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(atOut, "at_ms_out")
        out.pointee = try apps.get(handle).app.messages.nextExpiry() ?? 0
    }
}

@_cdecl("coords_messages_sweep_expired")
public func ffiMessagesSweepExpired(_ handle: Handle, _ idsOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(idsOut, "ids_json_out", app: handle, error) { app in
        let ids = try blocking { try await app.messages.sweepExpired() }
        return JSONValue.array(ids.map { .string($0) })
    }
}

// MARK: Notification policy (issue 43)

@_cdecl("coords_messages_mute")
public func ffiMessagesMute(_ handle: Handle, _ conversation: CString, _ untilMS: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let id = try Argument.string(conversation, "conversation")
        try blocking { try await app.messages.mute(id, until: untilMS == 0 ? nil : untilMS) }
    }
}

@_cdecl("coords_messages_muted_until")
public func ffiMessagesMutedUntil(_ handle: Handle, _ conversation: CString, _ untilOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let id = try Argument.string(conversation, "conversation")
        let out = try Argument.output(untilOut, "until_ms_out")
        out.pointee = try blocking { try await app.messages.mutedUntil(id) } ?? 0
    }
}

@_cdecl("coords_messages_set_quiet_hours")
public func ffiMessagesSetQuietHours(_ handle: Handle, _ start: Int32, _ end: Int32, _ offset: Int32, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let hours = start < 0 ? nil : try QuietHours(start: Int(start), end: Int(end), utcOffsetMinutes: Int(offset))
        try blocking { try await app.messages.setQuietHours(hours) }
    }
}

@_cdecl("coords_messages_set_receipts")
public func ffiMessagesSetReceipts(_ handle: Handle, _ on: Int32, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in try blocking { try await app.messages.setDeliveryReceipts(on != 0) } }
}

@_cdecl("coords_messages_notification_policy")
public func ffiMessagesNotificationPolicy(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in Record.notificationPolicy(try app.messages.notificationPolicy()) }
}

@_cdecl("coords_quiet_hours_parse")
public func ffiQuietHoursParse(
    _ window: CString, _ startOut: UnsafeMutablePointer<Int32>?, _ endOut: UnsafeMutablePointer<Int32>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let hours = try QuietHours(parsing: try Argument.string(window, "window"), utcOffsetMinutes: 0)
        let start = try Argument.output(startOut, "start_minute_out")
        let end = try Argument.output(endOut, "end_minute_out")
        start.pointee = Int32(hours.start)  // 0…1439
        end.pointee = Int32(hours.end)
    }
}
