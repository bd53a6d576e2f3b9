import CoordsCore

// MARK: Forward secrecy (PROTOCOL.md §10): prekeys and bundles; sessions are used by messages.

extension BundleOutcome {
    /// `{"result": "accepted", "one_time": b}`, `{"result": "not_offered"}` or `{"result": "refused", "error": Error}`.
    var json: JSONValue {
        switch self {
        case .accepted(let oneTime): .object(["result": .string("accepted"), "one_time": .bool(oneTime)])
        case .notOffered: .object(["result": .string("not_offered")])
        case .refused(let code, let reason):
            .object(["result": .string("refused"), "error": .object(["code": .number(String(code)), "message": .string(reason)])])
        }
    }
}

/// Checks an HTTP status argument (100…999).
private func httpStatus(_ status: Int32) throws -> Int {
    guard (100...999).contains(status) else { throw FFIError.invalid("status must be an HTTP status (100…999)") }
    return Int(status)
}

@_cdecl("coords_prekeys_prepare_upload")
public func ffiPrekeysPrepareUpload(_ handle: Handle, _ force: Int32, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in
        try app.sessions.preparePrekeyUpload(force: force != 0).map(\.json) ?? .null
    }
}

/// The shared shape of the two stock answers: status and body in, the stock (or -1) out.
private func processingStock(
    _ handle: Handle, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ stockOut: UnsafeMutablePointer<Int64>?,
    _ error: ErrorOut, _ process: (SessionsManager, Int, [UInt8]) throws -> Int?
) -> Int32 {
    exported(error) {
        let out = try Argument.output(stockOut, "stock_out")
        let code = try httpStatus(status)
        let bytes = try Argument.body(body, length)
        out.pointee = try process(try apps.get(handle).app.sessions, code, bytes).map { Int64($0) } ?? -1
    }
}

@_cdecl("coords_prekeys_process_upload")
public func ffiPrekeysProcessUpload(
    _ handle: Handle, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ stockOut: UnsafeMutablePointer<Int64>?,
    _ error: ErrorOut
) -> Int32 {
    processingStock(handle, status, body, length, stockOut, error) { try $0.processPrekeyUpload(status: $1, body: $2) }
}

@_cdecl("coords_prekeys_prepare_stock")
public func ffiPrekeysPrepareStock(_ handle: Handle, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in try app.sessions.prepareStockRequest().json }
}

@_cdecl("coords_prekeys_process_stock")
public func ffiPrekeysProcessStock(
    _ handle: Handle, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ stockOut: UnsafeMutablePointer<Int64>?,
    _ error: ErrorOut
) -> Int32 {
    processingStock(handle, status, body, length, stockOut, error) { try $0.processStock(status: $1, body: $2) }
}

@_cdecl("coords_prekeys_bundles_due")
public func ffiPrekeysBundlesDue(_ handle: Handle, _ idsOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(idsOut, "ids_json_out", app: handle, error) { app in JSONValue.array(try app.sessions.bundlesDue().map { .string($0) }) }
}

@_cdecl("coords_prekeys_prepare_bundle")
public func ffiPrekeysPrepareBundle(_ handle: Handle, _ friendID: CString, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in
        try app.sessions.prepareBundleRequest(for: try Argument.string(friendID, "friend_id")).json
    }
}

@_cdecl("coords_prekeys_process_bundle")
public func ffiPrekeysProcessBundle(
    _ handle: Handle, _ friendID: CString, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ outcomeOut: BufferOut,
    _ error: ErrorOut
) -> Int32 {
    returning(outcomeOut, "outcome_json_out", app: handle, error) { app in
        let friend = try Argument.string(friendID, "friend_id")
        let code = try httpStatus(status)
        return try app.sessions.processBundle(for: friend, status: code, body: try Argument.body(body, length)).json
    }
}

@_cdecl("coords_sessions_sweep")
public func ffiSessionsSweep(_ handle: Handle, _ erasedOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(erasedOut, "erased_out")
        out.pointee = UInt64(max(try apps.get(handle).app.sessions.sweep(), 0))
    }
}
