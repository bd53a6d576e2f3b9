import ArgumentParser
import CoordsCore

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

/// `coords strict [on|off]`: strict mode (PROTOCOL.md §6) refuses fetched entries that come
/// without their uploader's signature.
struct Strict: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn strict mode on or off (refuse positions that come without their uploader's signature).",
        discussion: """
            On, a fetched position is accepted only when the relay passes on the signature its uploader made, \
            checked against your friend's key: no relay can then hand you a position someone else uploaded. \
            A reference (Rust) relay passes on no signatures: with it every friend's position is refused. \
            Off (the default), such positions are accepted and shown as unverified.
            """)
    @OptionGroup var options: CommandOptions
    @Argument(help: "on or off (without it: show the setting).") var state: String?

    func validate() throws {
        guard state == nil || state == "on" || state == "off" else { throw ValidationError("say on or off") }
    }

    func run(in session: Session) async throws {
        if let state { try await session.app.wallet.setStrictMode(state == "on") }
        let strict = try session.app.wallet.isStrictMode()
        if options.json {
            printJSON(.object(["strict": .bool(strict)]))
        } else if strict {
            printLine("Strict mode is on: positions that come without their uploader's signature are refused.")
        } else {
            printLine("Strict mode is off: positions without their uploader's signature (from reference relays) are accepted as unverified.")
        }
    }
}
