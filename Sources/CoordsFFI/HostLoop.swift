import CCoordsABI
import CPlatform
import CoordsCore

// MARK: The one wake: coords_app_next_wake / coords_app_due / coords_app_report

extension Record {
    /// `{"id","purpose","request","outbox_id"?,"outbox_kind"?}`.
    static func hostRequest(_ r: HostRequest) -> JSONValue {
        var object = JSONObject([("id", .integer(r.id)), ("purpose", .string(r.purpose.rawValue)), ("request", r.request.json)])
        if let id = r.outboxID { object["outbox_id"] = .integer(id) }
        if let kind = r.outboxKind { object["outbox_kind"] = .string(kind.rawValue) }
        return .object(object)
    }

    /// `{"result": …, …}`: see coords_app_report in the header.
    static func hostAnswer(_ a: HostAnswer) -> JSONValue {
        switch a {
        case .outbox(let report): .object(["result": .string("outbox"), "outbox": outboxReport(report)])
        case .locations(let outcome): .object(["result": .string("locations"), "locations": Record.outcome(outcome)])
        case .messages(let outcome): .object(["result": .string("messages"), "messages": messagesOutcome(outcome)])
        case .prekeys(let stock): .object(["result": .string("prekeys"), "stock": stock.map { .integer(UInt64(clamping: $0)) } ?? .null])
        case .bundle(let friend, let outcome): .object(["result": .string("bundle"), "friend_id": .string(friend), "bundle": outcome.json])
        case .acknowledged: .object(["result": .string("acknowledged")])
        case .failed(let at, let reason): .object(["result": .string("failed"), "retry_at": .integer(at), "reason": .string(reason)])
        case .unknown: .object(["result": .string("unknown")])
        }
    }
}

@_cdecl("coords_app_next_wake")
public func ffiAppNextWake(_ handle: Handle, _ atOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(atOut, "at_ms_out")
        out.pointee = try apps.get(handle).app.nextWake() ?? 0
    }
}

@_cdecl("coords_app_due")
public func ffiAppDue(_ handle: Handle, _ now: UInt64, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        JSONValue.array(try blocking { try await app.due(now: now == 0 ? nil : now) }.map(Record.hostRequest))
    }
}

@_cdecl("coords_app_report")
public func ffiAppReport(
    _ handle: Handle, _ id: UInt64, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ jsonOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        guard status == 0 || (100...999).contains(status) else {
            throw FFIError.invalid("status must be an HTTP status (100…999) or 0 for no answer")
        }
        let bytes = try Argument.bytes(body, length, "body", maximum: Int(COORDS_MAX_BODY_BYTES))
        return Record.hostAnswer(try blocking { try await app.report(id: id, status: Int(status), body: bytes) })
    }
}

@_cdecl("coords_app_fetch_now")
public func ffiAppFetchNow(_ handle: Handle, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in app.fetchNow() }
}

@_cdecl("coords_app_set_fetch_interval")
public func ffiAppSetFetchInterval(_ handle: Handle, _ intervalMs: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in app.fetchInterval = intervalMs == 0 ? nil : intervalMs }
}

@_cdecl("coords_app_due_next")
public func ffiAppDueNext(_ handle: Handle, _ now: UInt64, _ requestOut: UnsafeMutablePointer<CoordsHostRequest>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(requestOut, "request_out")
        out.pointee = CoordsHostRequest()
        let entry = try apps.get(handle)
        let taken: HostRequest? = try entry.untaken.withLock { untaken in
            if untaken.isEmpty { untaken = try blocking { try await entry.app.due(now: now == 0 ? nil : now) } }
            return untaken.isEmpty ? nil : untaken.removeFirst()
        }
        guard let taken else { return }
        let headers = taken.request.headers.map { "\($0.name): \($0.value)\n" }.joined()
        var filled = CoordsHostRequest()
        filled.id = taken.id
        filled.max_response_bytes = UInt64(clamping: taken.request.maximumResponseBytes)
        do {
            try Output.write(taken.purpose.rawValue, to: &filled.purpose)
            try Output.write(taken.request.method, to: &filled.method)
            try Output.write(taken.request.url, to: &filled.url)
            try Output.write(headers, to: &filled.headers)
            try Output.write(taken.request.body, to: &filled.body)
        } catch {
            ffiHostRequestFree(&filled)
            throw error
        }
        out.pointee = filled
    }
}

@_cdecl("coords_host_request_free")
public func ffiHostRequestFree(_ request: UnsafeMutablePointer<CoordsHostRequest>?) {
    guard let request else { return }
    for field in [\CoordsHostRequest.purpose, \.method, \.url, \.headers, \.body] {
        free(request.pointee[keyPath: field].data)
        request.pointee[keyPath: field] = CoordsBuffer(data: nil, len: 0)
    }
    request.pointee.id = 0
}
