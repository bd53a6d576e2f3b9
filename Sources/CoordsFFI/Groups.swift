import CCoordsABI
import CoordsCore

// MARK: Records

extension Record {
    static func group(_ g: GroupInfo) -> JSONValue { g.hostJSON }

    static func groupChange(_ r: GroupChangeResult) -> JSONValue {
        .object([
            "group": group(r.group), "queued": .array(r.queued.map(outboxEntry)), "unreachable": .array(r.unreachable.map { .string($0) })
        ])
    }
}

// MARK: Groups manager

extension GroupsManagerReconcileMessage {
    /// This message as an update record (docs/ABI.md "Update types").
    var record: UpdateRecord {
        switch self {
        case .joined(let id, let name, let by): UpdateRecord("group_joined", ["group_id": .string(id), "name": .string(name), "by": .string(by)])
        case .changed(let id, let name, let epoch, let added, let removed, let renamed):
            UpdateRecord(
                "group_changed",
                [
                    "group_id": .string(id), "name": .string(name), "epoch": .integer(UInt64(epoch)), "added": .array(added.map { .string($0) }),
                    "removed": .array(removed.map { .string($0) }), "renamed": .bool(renamed)
                ])
        case .conflict(let id, let name): UpdateRecord("group_conflict", ["group_id": .string(id), "name": .string(name)])
        case .removed(let id, let name): UpdateRecord("group_removed", ["group_id": .string(id), "name": .string(name)])
        case .left(let id, let name): UpdateRecord("group_left", ["group_id": .string(id), "name": .string(name)])
        case .sharingChanged(let id, let sharing): UpdateRecord("group_sharing_changed", ["group_id": .string(id), "sharing": .bool(sharing)])
        case .statementRefused(let id, let code, let message): .failure(code, message, type: "group_statement_refused", id: id)
        case .errorOccurred(let code, let message): .failure(code, message)
        }
    }
}

/// A JSON array of member ids (b64u strings).
private func memberIDs(_ pointer: CString, _ name: String) throws -> [String] {
    guard let list = try Argument.json(pointer, name).arrayValue else { throw FFIError(code: COORDS_ERR_INVALID_JSON, message: "\(name) is not a JSON array") }
    return try list.map { item in
        guard let id = item.stringValue else { throw FFIError(code: COORDS_ERR_INVALID_JSON, message: "\(name) holds something other than id strings") }
        return id
    }
}

@_cdecl("coords_groups_create")
public func ffiGroupsCreate(_ handle: Handle, _ name: CString, _ membersJSON: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let title = try Argument.string(name, "name")
        let members = try memberIDs(membersJSON, "members_json")
        return Record.groupChange(try blocking { try await app.groups.create(name: title, members: members) })
    }
}

@_cdecl("coords_groups_add")
public func ffiGroupsAdd(_ handle: Handle, _ group: CString, _ membersJSON: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let members = try memberIDs(membersJSON, "members_json")
        return Record.groupChange(try blocking { try await app.groups.add(groupID: id, members: members) })
    }
}

@_cdecl("coords_groups_remove")
public func ffiGroupsRemove(_ handle: Handle, _ group: CString, _ membersJSON: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let members = try memberIDs(membersJSON, "members_json")
        return Record.groupChange(try blocking { try await app.groups.remove(groupID: id, members: members) })
    }
}

@_cdecl("coords_groups_rename")
public func ffiGroupsRename(_ handle: Handle, _ group: CString, _ name: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let title = try Argument.string(name, "name")
        return Record.groupChange(try blocking { try await app.groups.rename(groupID: id, to: title) })
    }
}

@_cdecl("coords_groups_set_admin")
public func ffiGroupsSetAdmin(_ handle: Handle, _ group: CString, _ member: CString, _ isAdmin: Int32, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let who = try Argument.string(member, "member")
        return Record.groupChange(try blocking { try await app.groups.setAdmin(groupID: id, member: who, isAdmin: isAdmin != 0) })
    }
}

@_cdecl("coords_groups_leave")
public func ffiGroupsLeave(_ handle: Handle, _ group: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "change_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        return Record.groupChange(try blocking { try await app.groups.leave(groupID: id) })
    }
}

@_cdecl("coords_groups_delete")
public func ffiGroupsDelete(_ handle: Handle, _ group: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let id = try Argument.string(group, "group")
        try blocking { try await app.groups.delete(groupID: id) }
    }
}

@_cdecl("coords_groups_set_sharing")
public func ffiGroupsSetSharing(_ handle: Handle, _ group: CString, _ sharing: Int32, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "reseal_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let entry = try blocking { try await app.groups.setSharing(groupID: id, sharing != 0) }
        return Record.optional(entry, Record.outboxEntry)
    }
}

@_cdecl("coords_groups_send")
public func ffiGroupsSend(_ handle: Handle, _ group: CString, _ text: CString, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "sent_json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        let body = try Argument.string(text, "text")
        let sent = try blocking { try await app.groups.send(body, to: id) }
        return JSONValue.object([
            "message": Record.message(sent.message), "queued": .array(sent.queued.map(Record.outboxEntry)),
            "unreachable": .array(sent.unreachable.map { .string($0) })
        ])
    }
}

@_cdecl("coords_groups_list")
public func ffiGroupsList(_ handle: Handle, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "json_out", app: handle, error) { app in JSONValue.array(try app.groups.groups().map(Record.group)) }
}

@_cdecl("coords_groups_history")
public func ffiGroupsHistory(_ handle: Handle, _ group: CString, _ limit: UInt32, _ out: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(out, "json_out", app: handle, error) { app in
        let id = try Argument.string(group, "group")
        return JSONValue.array(try app.groups.history(groupID: id, limit: limit == 0 ? nil : Int(limit)).map(Record.message))
    }
}
