// Exports for CoordsApp handles (see include/coordscore.h for each contract).
import CCoordsABI
import CPlatform
import CoordsCore
import Synchronization

/// An open app as the C ABI holds it, with its optional update-callback thread.
final class AppHandle: Sendable {
    let app: CoordsCore.CoordsApp
    let callback = Mutex<CallbackRunner?>(nil)
    /// Requests of the last ``CoordsApp/due(now:only:ignoringBackoff:)`` not yet taken by `coords_app_due_next`.
    let untaken = Mutex<[HostRequest]>([])
    init(app: CoordsCore.CoordsApp) { self.app = app }

    /// Stops the callback thread (joining it unless called from it).
    func stopCallback() {
        callback.withLock { $0 }.map { $0.stop() }
        callback.withLock { $0 = nil }
    }
}

let apps = HandleTable<AppHandle>(kind: 0xA)

/// Reads the options JSON of coords_app_open* (parsed and validated by
/// `CoordsApp.Options(json:keychain:)` in the core; its `OptionsError` is code 103 like every
/// argument error). `keychain` overrides the file keychain.
private func options(_ json: CString, keychain: (any Keychain)?) throws -> CoordsCore.CoordsApp.Options {
    let object = json == nil ? JSONObject() : try Argument.json(json, "options_json").objectValue
    guard let object else { throw FFIError.invalid("options_json must be a JSON object") }
    return try CoordsCore.CoordsApp.Options(json: object, keychain: keychain)
}

private func open(
    _ directory: CString, _ json: CString, keychain: (any Keychain)?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) throws {
    let out = try Argument.output(out, "app_out")
    out.pointee = nil
    let path = try Argument.string(directory, "data_dir")
    guard !path.isEmpty else { throw FFIError.invalid("data_dir must not be empty") }
    let app = try CoordsCore.CoordsApp.open(directory: path, options: try options(json, keychain: keychain))
    out.pointee = apps.insert(AppHandle(app: app))
}

@_cdecl("coords_app_open")
public func ffiAppOpen(_ directory: CString, _ json: CString, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ error: ErrorOut) -> Int32 {
    exported(error) { try open(directory, json, keychain: nil, out) }
}

@_cdecl("coords_app_open_with_keychain")
public func ffiAppOpenWithKeychain(
    _ directory: CString, _ json: CString, _ callbacks: UnsafePointer<CoordsKeychainCallbacks>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let table = try Argument.required(callbacks, "keychain").pointee
        try open(directory, json, keychain: try HostKeychain(table), out)
    }
}

@_cdecl("coords_app_rekey")
public func ffiAppRekey(_ handle: Handle, _ error: ErrorOut) -> Int32 {
    exported(error) { try apps.get(handle).app.rekeyStore() }
}

@_cdecl("coords_app_close")
public func ffiAppClose(_ handle: Handle, _ error: ErrorOut) -> Int32 {
    exported(error) {
        guard handle != nil else { return }
        let app = try apps.remove(handle)
        app.stopCallback()
        app.app.close()
    }
}

@_cdecl("coords_app_next_update")
public func ffiAppNextUpdate(_ handle: Handle, _ timeoutMilliseconds: Int64, _ messageOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(messageOut, "message_json_out")
        let app = try apps.get(handle).app
        switch app.nextUpdate(timeout: timeoutMilliseconds < 0 ? nil : .milliseconds(timeoutMilliseconds)) {
        case .update(let update): try Output.write(Record.update(update), to: out)
        case .timedOut: throw ChannelError.timedOut
        case .closed: throw ChannelError.disconnected
        }
    }
}

@_cdecl("coords_app_set_update_callback")
public func ffiAppSetUpdateCallback(_ handle: Handle, _ callback: CoordsUpdateCallback?, _ context: UnsafeMutableRawPointer?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let app = try apps.get(handle)
        app.stopCallback()
        guard let callback else { return }
        let runner = CallbackRunner(app: app.app, callback: callback, context: context)
        try runner.start()
        app.callback.withLock { $0 = runner }
    }
}

// MARK: Wallet

extension WalletManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .identityCreated(let id): UpdateRecord("identity_created", ["id": .string(id)])
        case .identityImported(let id): UpdateRecord("identity_imported", ["id": .string(id)])
        case .backupRestored(let id, let count): UpdateRecord("backup_restored", ["id": .string(id), "friend_count": .integer(UInt64(count))])
        case .profileChanged(let name, let server): UpdateRecord("profile_changed", ["name": .string(name), "server": .string(server)])
        case .strictModeChanged(let strict): UpdateRecord("strict_mode_changed", ["strict_mode": .bool(strict)])
        case .identityRotated(let from, let to, let revoked):
            UpdateRecord("identity_rotated", ["from": .string(from), "to": .string(to), "revoked": .bool(revoked)])
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

@_cdecl("coords_wallet_create_identity")
public func ffiWalletCreateIdentity(_ handle: Handle, _ name: CString, _ server: CString, _ idOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(idOut, "id_out", app: handle, error) { app in
        let name = try Argument.string(name, "name")
        let server = try Argument.string(server, "server")
        return try blocking { try await app.wallet.createIdentity(name: name, server: server) }
    }
}

@_cdecl("coords_wallet_import_seed")
public func ffiWalletImportSeed(
    _ handle: Handle, _ seed: UnsafePointer<UInt8>?, _ name: CString, _ server: CString, _ idOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    returning(idOut, "id_out", app: handle, error) { app in
        let seed = try Argument.identity(seed).seed
        let name = try Argument.string(name, "name")
        let server = try Argument.string(server, "server")
        return try blocking { try await app.wallet.importSeed(seed, name: name, server: server) }
    }
}

@_cdecl("coords_wallet_set_profile")
public func ffiWalletSetProfile(_ handle: Handle, _ name: CString, _ server: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let name = try Argument.optionalString(name, "name")
        let server = try Argument.optionalString(server, "server")
        try blocking { try await app.wallet.setProfile(name: name, server: server) }
    }
}

@_cdecl("coords_wallet_set_strict_mode")
public func ffiWalletSetStrictMode(_ handle: Handle, _ strict: Bool, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        try blocking { try await app.wallet.setStrictMode(strict) }
    }
}

@_cdecl("coords_wallet_info")
public func ffiWalletInfo(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(jsonOut, "json_out")
        let wallet = try apps.get(handle).app.wallet
        let profile = try wallet.profile()
        try Output.write(
            .object([
                "has_identity": .bool(wallet.hasIdentity),
                // No identity yet: the record says null (has_identity is false), not an error.
                "id": (try? wallet.id()).map { .string($0) } ?? .null,
                "name": .string(profile.name),
                "server": .string(profile.server),
                // No identity or no server yet: no link to show, null.
                "link": (try? wallet.friendLink()).map { .string($0) } ?? .null,
                "strict_mode": .bool(try wallet.isStrictMode())
            ]), to: out)
    }
}

@_cdecl("coords_wallet_public_key")
public func ffiWalletPublicKey(_ handle: Handle, _ publicOut: UnsafeMutablePointer<UInt8>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(publicOut, "public_out")
        Output.copy(try apps.get(handle).app.wallet.publicKey().rawRepresentation, to: out)
    }
}

@_cdecl("coords_wallet_friend_link")
public func ffiWalletFriendLink(_ handle: Handle, _ linkOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(linkOut, "link_out", app: handle, error) { app in try app.wallet.friendLink() }
}

@_cdecl("coords_wallet_safety_number")
public func ffiWalletSafetyNumber(_ handle: Handle, _ friend: UnsafePointer<UInt8>?, _ textOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(textOut, "text_out", app: handle, error) { app in
        return try app.wallet.safetyNumber(with: try Argument.publicKey(friend, "friend_public"))
    }
}

@_cdecl("coords_wallet_sign")
public func ffiWalletSign(
    _ handle: Handle, _ message: UnsafePointer<UInt8>?, _ length: Int, _ signatureOut: UnsafeMutablePointer<UInt8>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.output(signatureOut, "sig_out")
        let app = try apps.get(handle).app
        let bytes = try Argument.bytes(message, length, "msg", maximum: Int(COORDS_MAX_MESSAGE_BYTES))
        Output.copy(try app.wallet.sign(bytes), to: out)
    }
}

@_cdecl("coords_wallet_export_backup")
public func ffiWalletExportBackup(_ handle: Handle, _ passphrase: CString, _ backupOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(backupOut, "backup_out", app: handle, error) { app in
        let passphrase = try Argument.string(passphrase, "passphrase")
        return try blocking { try await app.wallet.exportBackup(passphrase: passphrase) }
    }
}

@_cdecl("coords_wallet_rotate")
public func ffiWalletRotate(_ handle: Handle, _ server: CString, _ revoke: Bool, _ rotationOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(rotationOut, "rotation_json_out", app: handle, error) { app in
        let server = try Argument.optionalString(server, "server")
        let rotation = try blocking { try await app.rotateIdentity(server: server, revoke: revoke) }
        return JSONValue.object([
            "id": .string(rotation.id), "statement": rotation.statement.json,
            "statements": .array(rotation.statements.map(Record.outboxEntry)),
            "upload": Record.optional(rotation.upload, Record.upload), "delete_previous": rotation.deletePrevious.json
        ])
    }
}

@_cdecl("coords_wallet_previous_identities")
public func ffiWalletPreviousIdentities(_ handle: Handle, _ idsOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(idsOut, "ids_json_out", app: handle, error) { app in
        JSONValue.array(try app.wallet.previousIdentities().map { .string($0) })
    }
}

@_cdecl("coords_messages_queue_rotation_statements")
public func ffiMessagesQueueRotationStatements(_ handle: Handle, _ entriesOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(entriesOut, "entries_json_out", app: handle, error) { app in
        JSONValue.array(try blocking { try await app.messages.queueRotationStatements() }.map(Record.outboxEntry))
    }
}

@_cdecl("coords_friends_resolve_conflict")
public func ffiFriendsResolveConflict(_ handle: Handle, _ id: CString, _ keep: CString, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        let id = try Argument.string(id, "id")
        let keep = try Argument.string(keep, "keep")
        return Record.friend(try blocking { try await app.friends.resolveConflict(id: id, keep: keep) })
    }
}

@_cdecl("coords_wallet_import_backup")
public func ffiWalletImportBackup(
    _ handle: Handle, _ backup: UnsafePointer<UInt8>?, _ length: Int, _ passphrase: CString, _ idOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    returning(idOut, "id_out", app: handle, error) { app in
        let bytes = try Argument.bytes(backup, length, "backup", maximum: Int(COORDS_MAX_BODY_BYTES))
        let passphrase = try Argument.string(passphrase, "passphrase")
        return try blocking { try await app.wallet.importBackup(bytes, passphrase: passphrase) }
    }
}

// MARK: Friends

extension FriendsManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .friendAdded(let friend): UpdateRecord("friend_added", ["friend": Record.friend(friend)])
        case .friendUpdated(let friend): UpdateRecord("friend_updated", ["friend": Record.friend(friend)])
        case .friendRemoved(let id): UpdateRecord("friend_removed", ["id": .string(id)])
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

@_cdecl("coords_friends_add_link")
public func ffiFriendsAddLink(_ handle: Handle, _ link: CString, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        let link = try Argument.string(link, "link")
        return Record.friend(try blocking { try await app.friends.add(link: link) })
    }
}

@_cdecl("coords_friends_add")
public func ffiFriendsAdd(_ handle: Handle, _ json: CString, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        guard let object = try Argument.json(json, "friend_json").objectValue, let id = object["id"]?.stringValue,
            let server = object["server"]?.stringValue
        else {
            throw FFIError.invalid("friend_json must be {\"id\", \"server\", \"name\"?, \"share_with\"?, \"fetch_from\"?}")
        }
        let name = object["name"]?.stringValue ?? ""
        let share = object["share_with"]?.boolValue ?? true
        let fetch = object["fetch_from"]?.boolValue ?? true
        return
            Record.friend(
                try blocking {
                    try await app.friends.add(id: id, server: server, name: name, shareWith: share, fetchFrom: fetch)
                })
    }
}

@_cdecl("coords_friends_update")
public func ffiFriendsUpdate(_ handle: Handle, _ id: CString, _ json: CString, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        let id = try Argument.string(id, "id")
        guard let changes = try Argument.json(json, "changes_json").objectValue else {
            throw FFIError.invalid("changes_json must be an object")
        }
        let trust = try changes["trust"].map { value -> TrustState in
            guard let trust = value.stringValue.flatMap(TrustState.init(rawValue:)) else {
                throw FFIError.invalid("trust must be \"unverified\", \"verified\" or \"blocked\"")
            }
            return trust
        }
        let name = changes["name"]?.stringValue
        let share = changes["share_with"]?.boolValue
        let fetch = changes["fetch_from"]?.boolValue
        let friend = try blocking { () async throws -> Friend in
            var friend = try await app.friends.update(id: id, name: name, shareWith: share, fetchFrom: fetch)
            if let trust { friend = try await app.friends.setTrust(id: id, trust) }
            return friend
        }
        return Record.friend(friend)
    }
}

@_cdecl("coords_friends_remove")
public func ffiFriendsRemove(_ handle: Handle, _ id: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let id = try Argument.string(id, "id")
        try blocking { try await app.friends.remove(id: id) }
    }
}

@_cdecl("coords_friends_share")
public func ffiFriendsShare(_ handle: Handle, _ id: CString, _ untilMilliseconds: UInt64, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        let id = try Argument.string(id, "id")
        return Record.friend(try blocking { try await app.friends.share(id: id, until: untilMilliseconds == 0 ? nil : untilMilliseconds) })
    }
}

@_cdecl("coords_friends_pause")
public func ffiFriendsPause(_ handle: Handle, _ id: CString, _ friendOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(friendOut, "friend_json_out", app: handle, error) { app in
        let id = try Argument.string(id, "id")
        return Record.friend(try blocking { try await app.friends.pause(id: id) })
    }
}

@_cdecl("coords_friends_list")
public func ffiFriendsList(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in JSONValue.array(try app.friends.list().map(Record.friend)) }
}

// MARK: Location

extension LocationManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .uploadPrepared(let fix, let count):
            UpdateRecord("upload_prepared", ["fix_timestamp": .integer(fix), "recipient_count": .integer(UInt64(count))])
        case .uploadSucceeded(let fix): UpdateRecord("upload_succeeded", ["fix_timestamp": .integer(fix)])
        case .uploadFailed(let fix, let reason): UpdateRecord("upload_failed", ["fix_timestamp": .integer(fix), "reason": .string(reason)])
        case .fetchesPrepared(let count): UpdateRecord("fetches_prepared", ["request_count": .integer(UInt64(count))])
        case .locationsUpdated(let list): UpdateRecord("locations_updated", ["locations": .array(list.map(Record.friendLocation))])
        case .entryRejected(let id, let code, let message): .failure(code, message, type: "entry_rejected", id: id)
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

@_cdecl("coords_location_prepare_upload")
public func ffiLocationPrepareUpload(_ handle: Handle, _ fix: UnsafePointer<CoordsLocation>?, _ uploadOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(uploadOut, "upload_json_out", app: handle, error) { app in
        let location = try Argument.location(fix, "fix")
        return Record.upload(try blocking { try await app.location.prepareUpload(location) })
    }
}

@_cdecl("coords_location_prepare_reseal")
public func ffiLocationPrepareReseal(_ handle: Handle, _ force: Bool, _ uploadOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(uploadOut, "upload_json_out", app: handle, error) { app in
        try blocking { try await app.location.prepareReseal(force: force) }.map(Record.upload) ?? .null
    }
}

@_cdecl("coords_location_next_share_expiry")
public func ffiLocationNextShareExpiry(_ handle: Handle, _ untilOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(untilOut, "until_ms_out")
        out.pointee = try apps.get(handle).app.location.nextShareExpiry() ?? 0
    }
}

@_cdecl("coords_location_prepare_delete")
public func ffiLocationPrepareDelete(_ handle: Handle, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestOut, "request_json_out", app: handle, error) { app in
        return try blocking { try await app.location.prepareDelete() }.json
    }
}

@_cdecl("coords_location_mark_upload_succeeded")
public func ffiLocationMarkUploadSucceeded(_ handle: Handle, _ fixTimestamp: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        try blocking { try await app.location.markUploadSucceeded(fixTimestamp: fixTimestamp) }
    }
}

@_cdecl("coords_location_mark_upload_failed")
public func ffiLocationMarkUploadFailed(_ handle: Handle, _ fixTimestamp: UInt64, _ reason: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let reason = try Argument.string(reason, "reason")
        try blocking { await app.location.markUploadFailed(fixTimestamp: fixTimestamp, reason: reason) }
    }
}

@_cdecl("coords_location_prepare_fetches")
public func ffiLocationPrepareFetches(_ handle: Handle, _ requestsOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(requestsOut, "requests_json_out", app: handle, error) { app in
        return JSONValue.array(try blocking { try await app.location.prepareFetches() }.map(Record.fetch))
    }
}

@_cdecl("coords_location_process_fetch_response")
public func ffiLocationProcessFetchResponse(
    _ handle: Handle, _ body: UnsafePointer<UInt8>?, _ length: Int, _ outcomeOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    processingResponse(handle, body, length, outcomeOut, error) { app, bytes in Record.outcome(try await app.location.processFetchResponse(bytes)) }
}

@_cdecl("coords_location_friend_locations")
public func ffiLocationFriendLocations(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        JSONValue.array(try app.location.friendLocations().map(Record.friendLocation))
    }
}

// MARK: Outbox

extension OutboxManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .queued(let id, let kind): UpdateRecord("queued", ["id": .integer(id), "kind": .string(kind.rawValue)])
        case .delivered(let id, let kind): UpdateRecord("delivered", ["id": .integer(id), "kind": .string(kind.rawValue)])
        case .dropped(let id, let kind, let reason):
            UpdateRecord("dropped", ["id": .integer(id), "kind": .string(kind.rawValue), "reason": .string(reason)])
        case .retryScheduled(let id, let attempts, let next):
            UpdateRecord("retry_scheduled", ["id": .integer(id), "attempts": .integer(UInt64(attempts)), "next_attempt_at": .integer(next)])
        case .removed(let id): UpdateRecord("removed", ["id": .integer(id)])
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

@_cdecl("coords_outbox_enqueue")
public func ffiOutboxEnqueue(
    _ handle: Handle, _ kind: CString, _ requestJSON: CString, _ reference: CString, _ idOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.output(idOut, "id_out")
        let app = try apps.get(handle).app
        let kindName = try Argument.string(kind, "kind")
        guard let kind = OutboxKind(rawValue: kindName) else {
            let names = OutboxKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw FFIError.invalid("kind must be one of \(names)")
        }
        let request = try PreparedRequest(json: try Argument.json(requestJSON, "request_json"))
        let reference = try Argument.optionalString(reference, "reference")
        out.pointee = try blocking { try await app.outbox.enqueue(kind: kind, request: request, reference: reference) }
    }
}

@_cdecl("coords_outbox_pending")
public func ffiOutboxPending(_ handle: Handle, _ dueOnly: Bool, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        JSONValue.array(try (dueOnly ? app.outbox.listDue() : app.outbox.pending()).map(Record.outboxEntry))
    }
}

@_cdecl("coords_outbox_queue_upload")
public func ffiOutboxQueueUpload(_ handle: Handle, _ fix: UnsafePointer<CoordsLocation>?, _ uploadOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(uploadOut, "upload_json_out", app: handle, error) { app in
        let location = try Argument.location(fix, "fix")
        let (upload, id) = try blocking { try await app.outbox.queueUpload(location) }
        guard case .object(var record) = Record.upload(upload) else { return Record.upload(upload) }
        record["outbox_id"] = .integer(id)
        return .object(record)
    }
}

@_cdecl("coords_outbox_due")
public func ffiOutboxDue(_ handle: Handle, _ ignoringBackoff: Bool, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        JSONValue.array(try blocking { try await app.outboxDue(ignoringBackoff: ignoringBackoff) }.map(Record.outboxEntry))
    }
}

@_cdecl("coords_outbox_report")
public func ffiOutboxReport(
    _ handle: Handle, _ id: UInt64, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ jsonOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        guard (0...999).contains(status) else { throw FFIError.invalid("status must be an HTTP status (100…999) or 0 for no answer") }
        let bytes = try Argument.bytes(body, length, "body", maximum: Int(COORDS_MAX_BODY_BYTES))
        return Record.outboxReport(try blocking { try await app.outboxReport(id: id, status: Int(status), body: bytes) })
    }
}

@_cdecl("coords_outbox_next_wake")
public func ffiOutboxNextWake(_ handle: Handle, _ atOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(atOut, "at_ms_out")
        out.pointee = try apps.get(handle).app.outboxNextWake() ?? 0
    }
}

@_cdecl("coords_outbox_mark_delivered")
public func ffiOutboxMarkDelivered(_ handle: Handle, _ id: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        try blocking { try await app.outbox.markDelivered(id: id) }
    }
}

@_cdecl("coords_outbox_mark_failed")
public func ffiOutboxMarkFailed(_ handle: Handle, _ id: UInt64, _ reason: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let reason = try Argument.string(reason, "reason")
        _ = try blocking { try await app.outbox.markFailed(id: id, error: reason) }
    }
}

@_cdecl("coords_outbox_remove")
public func ffiOutboxRemove(_ handle: Handle, _ id: UInt64, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        try blocking { try await app.outbox.remove(id: id) }
    }
}
