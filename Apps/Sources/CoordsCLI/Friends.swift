import ArgumentParser
import CoordsCore

struct Add: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Add a friend from their coord:// link.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's link (coord://…/add/…#Name).") var link: String
    @Option(help: "Override the name from the link.") var name: String?
    @Option(help: "Use this relay URL instead of https:// plus the link's host (e.g. a plain-http test relay).")
    var server: String?
    @Flag(name: .customLong("no-qr"), help: "Do not draw the QR code of your own link.") var noQR = false

    func run(in session: Session) async throws {
        var friend: Friend
        if let server {
            let parsed = try FriendLink.parse(link)
            friend = try await session.app.friends.add(id: parsed.id, server: server, name: name ?? parsed.name)
        } else {
            friend = try await session.app.friends.add(link: link)
        }
        if let name { friend = try await session.app.friends.update(id: friend.id, name: name) }
        let number = try session.app.wallet.safetyNumber(with: friend.publicKey)
        // Adding shares at once: the core queued the last fix, sealed again for them as it is sent.
        let share = try await Self.sendShare(session: session)
        let now = nowMilliseconds()
        if options.json {
            printJSON(
                .object([
                    "id": .string(friend.id), "name": .string(friend.name), "server": .string(friend.server),
                    "safety_number": .string(number), "verified": .bool(friend.trust == .verified),
                    "share": .string(share.state), "shared_fix_ms": share.fix.map { .integer($0) } ?? .null
                ]))
            return
        }
        let shown = Terminal.safe(friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name)
        printLine("Added \(shown) (relay \(Terminal.safe(friend.server))).")
        switch (share.state, share.fix) {
        case ("sent", let fix?): printLine("Shared your position from \(age(since: fix, now: now)) ago with \(shown).")
        case ("queued", let fix?):
            printLine("Your position from \(age(since: fix, now: now)) ago goes to \(shown) once your relay answers (see `coords outbox`).")
        default: printLine("\(shown) will see your position from your next `coords share` on.")
        }
        printLine("Safety number: \(number)")
        printLine("Compare it with \(shown) in person or on a call; if it matches, run `coords verify \(shown)`.")
        printLine("")
        printLine("You see \(shown)'s position once they add you too. Your link for them:")
        let own = try session.app.wallet.friendLink()
        printLine(own)
        if !noQR {
            printRaw(try QRCode(text: own).render(ansi: isTerminal))
        }
    }

    /// Delivers the share the add queued (the core queued a reseal in the add's transaction and
    /// seals it for the new friend as it is taken): "sent", "queued" (the relay did not take it
    /// yet; the outbox retries) or "next-fix" (nothing was sealed before: the next share reaches
    /// them), with the fix's time.
    static func sendShare(session: Session) async throws -> (state: String, fix: UInt64?) {
        let reseal = try await deliverQueued(session: session)
        guard reseal.resealed else { return ("next-fix", nil) }
        return (reseal.queued ? "queued" : "sent", try session.app.location.uploadState().lastSealedFix)
    }
}

/// Finds a friend by name (case-insensitive) or id (or a unique id prefix of 6+ characters).
func findFriend(_ query: String, in session: Session) throws -> Friend {
    let friends = try session.app.friends.list()
    if let exact = friends.first(where: { $0.id == query }) { return exact }
    let byName = friends.filter { $0.name.lowercased() == query.lowercased() }
    if byName.count == 1 { return byName[0] }
    if byName.count > 1 { throw CLIFailure("several friends are called \"\(query)\"; use their id (coords friends --json)") }
    let byPrefix = query.count >= 6 ? friends.filter { $0.id.hasPrefix(query) } : []
    if byPrefix.count == 1 { return byPrefix[0] }
    throw CLIFailure("no friend \"\(query)\" (see `coords friends`)")
}

struct Friends: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "List your friends and their last known positions.")
    @OptionGroup var options: CommandOptions

    func run(in session: Session) async throws {
        let friends = try session.app.friends.list()
        let locations = Dictionary(uniqueKeysWithValues: try session.app.location.friendLocations().map { ($0.id, $0) })
        let now = nowMilliseconds()
        if options.json {
            printJSON(
                .object([
                    "friends": .array(
                        friends.map { friend in
                            let seen = locations[friend.id]
                            return .object([
                                "id": .string(friend.id), "name": .string(friend.name), "server": .string(friend.server),
                                "sharing": .bool(
                                    (friend.sharing == .on || friend.sharing == .until) && friend.trust != .blocked && friend.trust != .conflict),
                                "share_state": .string(friend.sharing.rawValue),
                                "share_until_ms": friend.shareUntil.map { .integer($0) } ?? .null,
                                "fetching": .bool(friend.fetchFrom), "trust": .string(friend.trust.rawValue),
                                "verified": .bool(friend.trust == .verified),
                                "protection": .string(friend.protection.rawValue), "reciprocal": .bool(friend.reciprocal),
                                "location": seen?.location.map(\.hostJSON) ?? .null,
                                "signature": seen?.authenticity.map { .string(signatureWord($0)) } ?? .null
                            ])
                        })
                ]))
            return
        }
        guard !friends.isEmpty else {
            printLine("No friends yet. Add one with `coords add LINK`; give them yours from `coords whoami`.")
            return
        }
        var table = TextTable("NAME", "SERVER", "SHARING", "LAST LOCATION", "AGE", "SIGNATURE", "VERIFIED", "PROTECTION")
        for friend in friends {
            let seen = locations[friend.id]
            table.add(
                friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name, friend.server,
                sharingText(friend, now: now), seen?.location.map(describe) ?? "—",
                seen?.location.map { age(since: $0.timestamp, now: now) } ?? "—",
                seen?.authenticity.map(signatureWord) ?? "—",
                friend.trust == .verified ? "yes" : (friend.trust == .blocked || friend.trust == .conflict ? friend.trust.rawValue : "no"),
                friend.protection.rawValue)
        }
        printLine(table.render())
        let oneSided = friends.filter { !$0.reciprocal }.map { Terminal.safe($0.name.isEmpty ? String($0.id.prefix(8)) : $0.name) }
        if !oneSided.isEmpty {
            printLine("")
            printLine("Not added you back yet (nothing of theirs has opened for you): \(oneSided.joined(separator: ", ")).")
            printLine("Give them your link from `coords whoami`.")
        }
    }
}

/// One word, one meaning: "verified" is only ever about a friend's identity the user compared
/// in person (`coords verify`); what the fetch checked is the uploader's signature: "signed",
/// "unsigned" (a reference relay sends none), "tampered", or "absent" (nothing stored).
func signatureWord(_ authenticity: RelayAPI.Authenticity) -> String {
    switch authenticity {
    case .verified: return "signed"
    case .unverified: return "unsigned"
    case .tampered: return "tampered"
    case .absent: return "absent"
    }
}

struct Verify: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Mark a friend verified after comparing safety numbers (or block them).")
    @OptionGroup var options: CommandOptions
    @Argument(help: "Name or id.") var friend: String
    @Flag(help: "Block instead: stop sharing with and fetching from them.") var block = false
    @Flag(help: "Back to unverified.") var reset = false
    @Option(parsing: .unconditional, help: "In a key conflict: the key (id) you compared and keep (an id may start with -).") var key: String?

    func run(in session: Session) async throws {
        let found = try findFriend(friend, in: session)
        if let key {
            let kept = try await session.app.friends.resolveConflict(id: found.id, keep: key)
            _ = try await deliverQueued(session: session)  // the reseal the kept key is owed
            if options.json {
                return printJSON(.object(["id": .string(kept.id), "name": .string(kept.name), "trust": .string("verified"), "verified": .bool(true)]))
            }
            return printLine("\(kept.name.isEmpty ? kept.id : kept.name) is now verified on key \(kept.id.prefix(12))…; sharing resumes.")
        }
        let trust: TrustState = block ? .blocked : (reset ? .unverified : .verified)
        _ = try await session.app.friends.setTrust(id: found.id, trust)
        if block { _ = try await deliverQueued(session: session) }  // the reseal blocking owes
        if options.json {
            return printJSON(
                .object([
                    "id": .string(found.id), "name": .string(found.name), "trust": .string(trust.rawValue),
                    "verified": .bool(trust == .verified)
                ]))
        }
        printLine("\(found.name.isEmpty ? found.id : found.name) is now \(trust.rawValue).")
    }
}

struct Remove: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a friend: later uploads are no longer sealed for them.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "Name or id.") var friend: String

    func run(in session: Session) async throws {
        let found = try findFriend(friend, in: session)
        try await session.app.friends.remove(id: found.id)
        let reseal = try await deliverQueued(session: session)
        if options.json {
            printJSON(
                .object(["id": .string(found.id), "name": .string(found.name), "removed": .bool(true), "resealed": .bool(reseal.resealed)]))
        } else {
            printLine("Removed \(found.name.isEmpty ? found.id : found.name). Your next share will not include them.")
            if let message = reseal.message { printLine(message) }
        }
        if reseal.queued { throw ExitCode(ExitStatus.queued) }
    }
}
