import ArgumentParser
import CoordsCore

/// `coords group …`: circles of friends sharing positions and messages (PROTOCOL.md §11).
struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Create and change groups of friends.",
        discussion: """
            A group is a circle of friends who share positions and talk as one. Its admins change \
            it; every member checks each change. Members are your friends, named as in \
            `coords friends` (or by id). List your groups with `coords groups`.
            """,
        subcommands: [Create.self, AddMembers.self, RemoveMembers.self, Leave.self, Rename.self, Admin.self, DeleteGroup.self])

    struct Create: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Create a group with friends; you are its admin.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name (1–64 bytes).") var name: String
        @Argument(help: "Friends to add (names or ids).") var members: [String] = []
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func run(in session: Session) async throws {
            let ids = try members.map { try findFriend($0, in: session).id }
            let result = try await session.app.groups.create(name: name, members: ids)
            try await report(result, "Created group \(Terminal.safe(result.group.name)) with \(result.group.members.count) members.", session, options)
        }
    }

    struct AddMembers: SessionCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add friends to a group (admins only).")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String
        @Argument(help: "Friends to add (names or ids).") var members: [String]
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func run(in session: Session) async throws {
            let ids = try members.map { try findFriend($0, in: session).id }
            let result = try await session.app.groups.add(groupID: try findGroup(group, in: session).id, members: ids)
            try await report(
                result, "Added \(ids.count) to \(Terminal.safe(result.group.name)); they see what is sent from now on.", session, options)
        }
    }

    struct RemoveMembers: SessionCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove members from a group (admins only).")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String
        @Argument(help: "Members to remove (friends' names, or ids).") var members: [String]
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func run(in session: Session) async throws {
            let ids = members.map { member in (try? findFriend(member, in: session).id) ?? member }  // a non-friend member by id
            let result = try await session.app.groups.remove(groupID: try findGroup(group, in: session).id, members: ids)
            try await report(
                result, "Removed \(ids.count) from \(Terminal.safe(result.group.name)); they read nothing sent from now on.", session, options)
        }
    }

    struct Leave: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Leave a group.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func run(in session: Session) async throws {
            let result = try await session.app.groups.leave(groupID: try findGroup(group, in: session).id)
            try await report(result, "You left \(Terminal.safe(result.group.name)).", session, options)
        }
    }

    struct Rename: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a group (admins only).")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String
        @Argument(help: "The new name (1–64 bytes).") var name: String
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func run(in session: Session) async throws {
            let result = try await session.app.groups.rename(groupID: try findGroup(group, in: session).id, to: name)
            try await report(result, "Renamed the group to \(Terminal.safe(result.group.name)).", session, options)
        }
    }

    struct Admin: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Make a member an admin, or not (admins only).")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String
        @Argument(help: "The member (a friend's name, or an id).") var member: String
        @Argument(help: "on or off.") var state: String = "on"
        var outboxFirst: OutboxFirst { .deliver(json: options.json) }

        func validate() throws {
            guard state == "on" || state == "off" else { throw ValidationError("say on or off, e.g. coords group admin Trip Bob on") }
        }

        func run(in session: Session) async throws {
            let id = (try? findFriend(member, in: session).id) ?? member  // a non-friend member by id
            let result = try await session.app.groups.setAdmin(groupID: try findGroup(group, in: session).id, member: id, isAdmin: state == "on")
            try await report(result, "Admins of \(Terminal.safe(result.group.name)) changed.", session, options)
        }
    }

    struct DeleteGroup: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Forget a group you left, were removed from or are the last member of.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The group's name or id.") var group: String

        func run(in session: Session) async throws {
            let found = try findGroup(group, in: session)
            try await session.app.groups.delete(groupID: found.id)
            if options.json { return printJSON(.object(["id": .string(found.id), "deleted": .bool(true)])) }
            printLine("Forgot \(Terminal.safe(found.name)) and its messages.")
        }
    }
}

/// `coords groups`: the groups kept, with members and standing.
struct GroupsList: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "groups", abstract: "List your groups.")
    @OptionGroup var options: CommandOptions

    func run(in session: Session) async throws {
        let groups = try session.app.groups.groups()
        if options.json { return printJSON(.object(["groups": .array(groups.map(\.hostJSON))])) }
        guard !groups.isEmpty else { return printLine("No groups yet. Create one with `coords group create NAME FRIEND…`.") }
        var table = TextTable("GROUP", "MEMBERS", "YOU", "SHARING", "STATE")
        for group in groups {
            let members = group.members.map { $0.isSelf ? "you" : ($0.name ?? String($0.id.prefix(8)) + "…") }.joined(separator: ", ")
            let state = group.inConflict ? "conflict" : group.status.rawValue
            table.add(group.name, members, group.isAdmin ? "admin" : "member", group.sharing ? "on" : "off", state)
        }
        printLine(table.render())
    }
}

/// A group by exact name or id.
func findGroup(_ query: String, in session: Session) throws -> GroupInfo {
    do {
        return try session.app.groups.group(query)
    } catch GroupsManagerError.notFound {
        throw CLIFailure("no group \"\(Terminal.safe(query))\" (see coords groups; names are exact, two alike need the id)")
    }
}

/// Sends what a group change queued, then says what happened.
private func report(_ result: GroupChangeResult, _ line: String, _ session: Session, _ options: CommandOptions) async throws {
    var queued = 0
    for entry in result.queued {
        let sent = try await OutboxDelivery.deliver(id: entry.id, entry.item.request, session: session)
        if sent.isQueued { queued += 1 }
    }
    if options.json {
        return printJSON(
            .object([
                "group": result.group.hostJSON, "unreachable": .array(result.unreachable.map { .string($0) }),
                "queued": .integer(UInt64(queued))
            ]))
    }
    printLine(line)
    if !result.unreachable.isEmpty {
        printLine("\(result.unreachable.count) member(s) are not your friends and were not told; add them as friends to reach them.")
    }
    if queued > 0 { printLine("\(queued) request(s) could not reach a relay and are queued; they will be retried.") }
}
