import ArgumentParser
import CoordsBuildInfo
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// `coords`: the command-line host of CoordsCore.
public struct CoordsCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "coords",
        abstract: "End-to-end encrypted location sharing from the terminal.",
        discussion: """
            The data directory (--home, default ~/.coords) holds your identity (in a keychain sealed \
            with your passphrase: COORDS_PASSPHRASE or a prompt), your friends and their last \
            positions. Requests the relay could not take are queued in the outbox; every command \
            that talks to a relay sends the outbox first. Friends' positions are named offline from \
            bundled GeoNames data; set COORDS_PLACES_FILE to a CGEO file \
            (built by the source tree's build-geodata script) for the larger set. Every data command takes \
            --json (one object; times in milliseconds, keys ending _ms). Its schemas, and \
            everything else a script relies on: https://github.com/coords/coordscore/blob/main/docs/CLI.md

            Exit status: 0 done; 1 usage or input error, or a refusal; 2 a fetch reached only \
            some relays; 69 no relay could be reached; 75 queued in the outbox for later. Errors \
            go to standard error, data to standard output.
            """,
        version: BuildVersion.line(),
        subcommands: [
            Init.self, WhoAmI.self, Add.self, Friends.self, Verify.self, Remove.self, Share.self, Fetch.self,
            Watch.self, Delete.self, ShareWith.self, Pause.self, Rotate.self, Revoke.self, Rekey.self, Send.self, Inbox.self, Chat.self, Push.self, Backup.self,
            Outbox.self
        ])

    public init() {}

    /// Parses `arguments` (without the program name), runs the command and exits with the
    /// documented status: 0 done, 1 usage or input error (ArgumentParser's own 64 included),
    /// 2 a fetch reached only some relays, 69 it reached none, 75 work queued for later.
    /// Help and `--version` print to standard output and exit 0.
    public static func main(arguments: [String]) async -> Never {
        if let unknown = unknownCommand(arguments) {
            printError(unknown)
            Glibc.exit(ExitStatus.usage)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            exit(withError: nil)
        } catch {
            if exitCode(for: error) == .validationFailure {
                printError(fullMessage(for: error))
                Glibc.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

extension CoordsCommand {
    /// The refusal for a first word that is no command (`coords shrae --home X` used to say
    /// "Unknown option '--home'", blaming the next word), with the nearest command when one is
    /// close; nil when the first word is an option or a command.
    static func unknownCommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        let word = Terminal.safe(first)
        let nearest = names.map { ($0, editDistance($0, first)) }.min { $0.1 < $1.1 }
        if let (name, distance) = nearest, distance <= 2 {
            return "coords: unknown command '\(word)' — did you mean '\(name)'? (coords --help lists the commands)"
        }
        return "coords: unknown command '\(word)' (coords --help lists the commands)"
    }

    /// Levenshtein distance between two short words (Unicode scalars), for suggestions.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars.prefix(64))
        let b = Array(b.unicodeScalars.prefix(64))
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// The exit statuses of `coords` (docs/CLI.md and `coords --help`).
enum ExitStatus {
    /// Everything asked for was done.
    static let success: Int32 = 0
    /// A usage or input error, or a refusal (wrong passphrase, unknown friend, the relay said no).
    static let usage: Int32 = 1
    /// A fetch reached only some of the relays (the others are listed on standard error).
    static let partial: Int32 = 2
    /// No relay could be reached (a fetch, the inbox).
    static let unavailable: Int32 = 69
    /// Requests were queued in the outbox for a later command (EX_TEMPFAIL).
    static let queued: Int32 = 75
}

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create your identity.")
    @OptionGroup var options: CommandOptions
    @Option(help: "Your relay, e.g. https://coord.is.") var server: String
    @Option(help: "The name friends see in your link.") var name: String

    func run() async throws {
        try await runReporting {
            // Built in a hidden directory and renamed into place only when everything worked.
            let (id, link, home) = try await Session.create(options.global) { session in
                let id = try await session.app.wallet.createIdentity(name: name, server: server)
                session.writePublicProfile()
                return (id, try session.app.wallet.friendLink(), session.home)
            }
            let relayNote = await checkRelay(server)
            if options.json {
                printJSON(
                    .object([
                        "id": .string(id), "name": .string(name), "server": .string(server), "link": .string(link),
                        "relay_warning": relayNote.map { .string($0) } ?? .null
                    ]))
                return
            }
            printLine("Created your identity in \(home).")
            printLine("Your id:   \(id)")
            printLine("Your link: \(link)")
            printLine("Give the link to friends (or show `coords whoami`); add theirs with `coords add LINK`.")
            if let relayNote { printLine("Note: \(relayNote)") }
        }
    }
}

/// Checks `GET /api/version`; returns a warning, or nil when the relay looks fine.
func checkRelay(_ server: String) async -> String? {
    // The only error is an invalid URL, which this warning names.
    guard let request = try? RelayAPI.prepareVersionCheck(server: server) else { return "\(server) is not a valid relay URL" }
    do {
        let result = try await RelayHTTP.send(request, timeout: 5)
        // An answer that is not a version is what the warning below reports.
        guard result.isSuccess, let version = try? RelayAPI.parseVersion(result.body) else {
            return "\(server) answered \(result.status) to /api/version; is it a Coords relay?"
        }
        return version.isCompatible ? nil : "\(server) reports \(version.name) \(version.version), older than the apps expect"
    } catch {
        return "\(server) is not reachable right now (\(error)); uploads will be queued until it is"
    }
}

struct WhoAmI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "whoami", abstract: "Show your id, link and its QR code.")
    @OptionGroup var options: CommandOptions
    @Flag(name: .customLong("no-qr"), help: "Do not draw the QR code.") var noQR = false

    func run() async throws {
        try await runReporting {
            // public.json holds what is public: no passphrase needed. Older data directories
            // (or a damaged file) unlock the keychain once and get the file written.
            let profile: PublicProfile
            if let stored = PublicProfile.read(home: options.global.path) {
                profile = stored
            } else {
                let session = try Session.open(options.global)
                defer { session.close() }
                let wallet = session.app.wallet
                profile = PublicProfile(
                    id: try wallet.id(), name: try wallet.profile().name, server: try wallet.profile().server,
                    link: try wallet.friendLink())
                session.writePublicProfile()
            }
            if options.json {
                printJSON(
                    .object([
                        "id": .string(profile.id), "name": .string(profile.name), "server": .string(profile.server),
                        "link": .string(profile.link)
                    ]))
                return
            }
            printLine("Name:   \(profile.name)")
            printLine("Id:     \(profile.id)")
            printLine("Relay:  \(profile.server)")
            printLine("Link:   \(profile.link)")
            if !noQR {
                let code = try QRCode(text: profile.link)
                printLine("")
                printRaw(code.render(ansi: isTerminal))
            }
        }
    }
}

struct Add: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Add a friend from their coord:// link.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's link (coord://…/add/…#Name).") var link: String
    @Option(help: "Override the name from the link.") var name: String?
    @Option(help: "Use this relay URL instead of https:// plus the link's host (e.g. a plain-http test relay).")
    var server: String?

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
        if options.json {
            printJSON(
                .object([
                    "id": .string(friend.id), "name": .string(friend.name), "server": .string(friend.server),
                    "safety_number": .string(number), "verified": .bool(friend.trust == .verified)
                ]))
            return
        }
        let shown = friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name
        printLine("Added \(shown) (relay \(friend.server)). You now share your position with them and see theirs.")
        printLine("Safety number: \(number)")
        printLine("Compare it with \(shown) in person or on a call; if it matches, run `coords verify \(shown)`.")
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
                                "location": seen?.location.map(locationJSON) ?? .null,
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
        var table = TextTable("NAME", "SERVER", "SHARING", "LAST LOCATION", "AGE", "SIGNATURE", "VERIFIED")
        for friend in friends {
            let seen = locations[friend.id]
            table.add(
                friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name, friend.server,
                sharingText(friend, now: now), seen?.location.map(describe) ?? "—",
                seen?.location.map { age(since: $0.timestamp, now: now) } ?? "—",
                seen?.authenticity.map(signatureWord) ?? "—",
                friend.trust == .verified ? "yes" : (friend.trust == .blocked || friend.trust == .conflict ? friend.trust.rawValue : "no"))
        }
        printLine(table.render())
    }
}

/// A position in JSON: degrees, metres (`_m`) and Unix milliseconds (`_ms`).
func locationJSON(_ l: Location) -> JSONValue {
    .object([
        "latitude": .double(l.latitude), "longitude": .double(l.longitude), "altitude_m": .double(l.altitude),
        "accuracy_m": .double(Double(l.accuracy)), "timestamp_ms": .integer(l.timestamp)
    ])
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
            _ = try await sendReseal(session: session)
            if options.json {
                return printJSON(.object(["id": .string(kept.id), "name": .string(kept.name), "trust": .string("verified"), "verified": .bool(true)]))
            }
            return printLine("\(kept.name.isEmpty ? kept.id : kept.name) is now verified on key \(kept.id.prefix(12))…; sharing resumes.")
        }
        let trust: TrustState = block ? .blocked : (reset ? .unverified : .verified)
        _ = try await session.app.friends.setTrust(id: found.id, trust)
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
        let reseal = try await sendReseal(session: session)
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
