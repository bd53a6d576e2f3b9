import ArgumentParser
import CoordsBuildInfo
import CoordsCore
import CoordsPushGateway
import CoordsRelay
import Foundation
import Hummingbird
import Logging

#if canImport(Glibc)
import Glibc
#endif

@main
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coords-push-gateway",
        abstract: "Turns a Coords relay's wake into an APNs or FCM push (run by an app's publisher).",
        discussion: """
            Relays POST a content-free wake to /up/<token>, where the token is the phone's APNs or \
            FCM device token sealed to this gateway's key (PROTOCOL.md §8.8); the gateway opens it \
            and sends a background push with no content. `keygen` makes the key pair, `public-key` \
            prints what the app seals to. Operator's guide: docs/PUSH.md.
            """,
        version: BuildVersion.line(),
        subcommands: [Serve.self, KeyGen.self, PublicKey.self],
        defaultSubcommand: Serve.self)
}

/// `coords-push-gateway keygen FILE`.
struct KeyGen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Create the gateway's key pair in FILE (mode 0600, never overwritten) and print its public key.")

    @Argument(help: "Where to write the private key.") var file: String

    func run() throws {
        do {
            let key = try GatewayKeyFile.generate(at: file)
            print(Base64.encode(key.publicKey.rawRepresentation))
        } catch {
            printError("coords-push-gateway: error: \(error)")
            throw ExitCode(73)  // EX_CANTCREAT
        }
    }
}

/// `coords-push-gateway public-key FILE`.
struct PublicKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "public-key", abstract: "Print the public key (base64url) of the gateway key in FILE: the key apps seal their tokens to.")

    @Argument(help: "The private key file keygen wrote.") var file: String

    func run() throws {
        do {
            print(Base64.encode(try GatewayKeyFile.load(file).publicKey.rawRepresentation))
        } catch {
            printError("coords-push-gateway: error: \(error)")
            throw ExitCode(66)  // EX_NOINPUT
        }
    }
}

/// `coords-push-gateway serve` (the default).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve wakes (the default subcommand).",
        discussion: """
            At least one provider is configured: APNs (--apns-key, --apns-key-id, --apns-team-id, \
            --apns-topic) and/or FCM (--fcm-service-account). A token for a platform without \
            credentials is answered 404. Credentials are read once at start; keep their files \
            readable by the gateway's user only (docs/PUSH.md).
            """)

    @Option(name: .long, help: "The address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "The port to listen on (0: any free port).") var port = 8090
    @Option(name: .customLong("key"), help: "The gateway's key file (coords-push-gateway keygen).") var key: String
    @Option(name: .customLong("previous-key"), help: "An earlier key whose tokens are still registered (repeatable).")
    var previousKeys: [String] = []

    @Option(name: .customLong("apns-key"), help: "The APNs signing key (.p8, PKCS#8 PEM).") var apnsKey: String?
    @Option(name: .customLong("apns-key-id"), help: "The APNs key id (10 characters).") var apnsKeyID: String?
    @Option(name: .customLong("apns-team-id"), help: "The Apple team id (10 characters).") var apnsTeamID: String?
    @Option(name: .customLong("apns-topic"), help: "The app's bundle id.") var apnsTopic: String?
    @Option(name: .customLong("apns-url"), help: "APNs for production tokens.") var apnsURL = "https://api.push.apple.com"
    @Option(name: .customLong("apns-development-url"), help: "APNs for development tokens.")
    var apnsDevelopmentURL = "https://api.sandbox.push.apple.com"
    @Option(
        name: .customLong("apns-token-refresh"),
        help: "Seconds after which the APNs provider token is signed anew (Apple: 1200 to 3600; tests use less).")
    var apnsTokenRefresh = 2400

    @Option(name: .customLong("fcm-service-account"), help: "The Firebase service account's JSON key file.") var fcmAccount: String?
    @Option(name: .customLong("fcm-url"), help: "FCM's HTTP v1 service.") var fcmURL = "https://fcm.googleapis.com"

    @Option(name: .customLong("rate-per-token"), help: "Wakes per minute one device may get (0: no limit).") var ratePerToken: Double = 30
    @Option(name: .customLong("rate-per-address"), help: "Wakes per minute one relay address may ask for (0: no limit).")
    var ratePerAddress: Double = 6000
    @Option(name: .customLong("max-in-flight"), help: "Wakes sent to providers at once; more are answered 429.") var maxInFlight = 512
    @Flag(name: .customLong("trust-forwarded-for"), help: "Read X-Forwarded-For from loopback peers (a proxy on this machine).")
    var trustForwardedFor = false
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"
    @Option(name: .customLong("log-format"), help: "text, or json (one object per line).") var logFormat = "text"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (1...3300).contains(apnsTokenRefresh) else { throw ValidationError("--apns-token-refresh must be 1 to 3300 seconds") }
        guard ratePerToken.isFinite, ratePerToken >= 0, ratePerAddress.isFinite, ratePerAddress >= 0 else {
            throw ValidationError("--rate-per-token and --rate-per-address are numbers of at least 0")
        }
        guard (1...100_000).contains(maxInFlight) else { throw ValidationError("--max-in-flight must be 1 to 100000") }
        let apns = [apnsKey, apnsKeyID, apnsTeamID, apnsTopic]
        guard apns.allSatisfy({ $0 == nil }) || apns.allSatisfy({ $0 != nil }) else {
            throw ValidationError("APNs needs all four of --apns-key, --apns-key-id, --apns-team-id and --apns-topic")
        }
        guard apnsKey != nil || fcmAccount != nil else {
            throw ValidationError("no provider: give the APNs options, --fcm-service-account, or both")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard RelayLogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be text or json") }
    }

    func run() async throws {
        LoggingSystem.bootstrap((RelayLogFormat(rawValue: logFormat) ?? .text).factory)
        var logger = Logger(label: "coords.gateway")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let gateway: PushGateway
        do {
            gateway = try makeGateway(logger: logger)
        } catch {
            printError("coords-push-gateway: error: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        var addresses = AddressPolicy()
        addresses.trustForwardedFor = trustForwardedFor
        let app = buildGatewayApplication(gateway: gateway, addresses: addresses, host: host, port: port, logger: logger)
        logger.info(
            "coords-push-gateway starting",
            metadata: [
                "address": "\(host):\(port)", "apns": "\(apnsKey != nil)", "fcm": "\(fcmAccount != nil)",
                "key": "\(gateway.publicKey.map { Base64.encode($0.rawRepresentation) } ?? "")"
            ])
        try await app.runService()
        logger.info("coords-push-gateway stopped")
    }

    private func makeGateway(logger: Logger) throws -> PushGateway {
        let keys = try ([key] + previousKeys).map(GatewayKeyFile.load)
        let clock: @Sendable () -> UInt64 = { UInt64(max(Date().timeIntervalSince1970, 0)) }
        var providers: [any PushProvider] = []
        if let apnsKey, let apnsKeyID, let apnsTeamID, let apnsTopic {
            let pem = try readSecretText(apnsKey, what: "the APNs key")
            let credentials = try APNsCredentials(p8: pem, keyID: apnsKeyID, teamID: apnsTeamID, topic: apnsTopic)
            providers.append(
                APNsProvider(
                    credentials: credentials, productionURL: try httpsURL(apnsURL, "--apns-url"),
                    developmentURL: try httpsURL(apnsDevelopmentURL, "--apns-development-url"),
                    tokenLifetime: .seconds(apnsTokenRefresh), clock: clock))
        }
        if let fcmAccount {
            let account = try FCMServiceAccount(json: Array(try readSecretText(fcmAccount, what: "the FCM service account").utf8))
            providers.append(FCMProvider(account: account, sendURL: try httpsURL(fcmURL, "--fcm-url"), clock: clock))
        }
        var limits = GatewayLimits()
        limits.perTokenPerMinute = ratePerToken
        limits.perAddressPerMinute = ratePerAddress
        limits.maximumInFlight = maxInFlight
        return PushGateway(
            keys: keys, providers: providers, limits: limits, logger: logger,
            clock: { UInt64(max(Date().timeIntervalSince1970 * 1000, 0)) })
    }

    private func httpsURL(_ text: String, _ option: String) throws -> String {
        guard text.lowercased().hasPrefix("https://"), text.utf8.count <= 512 else { throw GatewaySetupError("\(option) must be an https:// URL") }
        return text
    }
}

/// A credential file's text: refused when other users may read it (a publisher's push key).
func readSecretText(_ path: String, what: String) throws -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { throw GatewaySetupError("cannot read \(what) at \(path): \(String(cString: strerror(errno)))") }
    guard info.st_mode & 0o077 == 0 else {
        throw GatewaySetupError("\(what) at \(path) can be read by other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
    }
    guard info.st_size <= 64 * 1024, let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        throw GatewaySetupError("\(what) at \(path) is not a text file of at most 64 KiB")
    }
    return text
}
