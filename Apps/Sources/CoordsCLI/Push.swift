import ArgumentParser
import CoordsCore

/// `coords push register URL [--ttl SECONDS]`, `coords push register --gateway URL --gateway-key
/// KEY --apns HEX|--fcm TOKEN`, and `coords push unregister`: the push endpoint your relay POSTs a
/// content-free wake to when a message arrives for you (PROTOCOL.md §8.7), directly or through
/// the app publisher's push gateway to APNs or FCM (§8.8).
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Let your relay wake a sleeping phone (a UnifiedPush endpoint) when a message arrives.",
        subcommands: [Register.self, Unregister.self])

    struct Register: SessionCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register the URL your relay POSTs a wake to (renewed by `coords watch` on time).",
            discussion: "The relay sends {\"type\":\"coords-wake\"} and nothing else: no sender, no message id, no size.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The endpoint: an https:// URL from the phone's UnifiedPush distributor (or use --gateway).") var endpoint: String?
        @Option(help: "Seconds the registration lives (60…2592000; the relay's default is 7 days).") var ttl: UInt64?
        @Option(help: "A push gateway's https:// URL (PROTOCOL.md §8.8): the relay wakes the phone through it.") var gateway: String?
        @Option(help: "The gateway's X25519 public key (base64url, from the app's publisher).") var gatewayKey: String?
        @Option(help: "With --gateway: the phone's APNs device token (hexadecimal).") var apns: String?
        @Flag(help: "With --apns: the token comes from APNs' development service (a development build).") var apnsDevelopment = false
        @Option(help: "With --gateway: the phone's FCM registration token.") var fcm: String?

        func validate() throws {
            if gateway == nil {
                guard endpoint != nil else { throw ValidationError("give the endpoint URL, or --gateway with --gateway-key and --apns or --fcm") }
                guard gatewayKey == nil, apns == nil, fcm == nil, !apnsDevelopment else {
                    throw ValidationError("--gateway-key, --apns and --fcm go with --gateway")
                }
            } else {
                guard endpoint == nil else { throw ValidationError("give the endpoint URL or --gateway, not both") }
                guard gatewayKey != nil else { throw ValidationError("--gateway needs --gateway-key (the gateway's public key)") }
                guard (apns == nil) != (fcm == nil) else { throw ValidationError("--gateway needs one of --apns and --fcm") }
                guard !apnsDevelopment || apns != nil else { throw ValidationError("--apns-development goes with --apns") }
            }
        }

        /// The endpoint to register: the URL given, or the gateway's with the device token sealed to it.
        func resolvedEndpoint() throws -> String {
            guard let gateway, let gatewayKey else { return endpoint ?? "" }
            let key: X25519PublicKey
            do {
                key = try X25519PublicKey(rawRepresentation: try Base64.decode(gatewayKey, field: "gateway key"))
            } catch {
                throw CLIFailure("--gateway-key is not a 32-byte base64url key: \(describe(error))")
            }
            let token =
                if let apns {
                    try PushGatewayToken(platform: .apns, device: apns, environment: apnsDevelopment ? .development : .production)
                } else {
                    try PushGatewayToken(platform: .fcm, device: fcm ?? "")
                }
            return try token.endpoint(gateway: gateway, key: key)
        }

        func run(in session: Session) async throws {
            let endpoint = try resolvedEndpoint()
            let request = try session.app.messages.preparePushRegistration(endpoint: endpoint, ttlSeconds: ttl)
            let answer = try await Push.send(request, action: "register the push endpoint")
            let expires = answer?["expiresAt"]?.uint64Value ?? 0
            if options.json {
                return printJSON(.object(["endpoint": .string(endpoint), "expires_at_ms": .integer(expires.multipliedSaturating(by: 1000))]))
            }
            let shown = gateway.map { "your phone through the push gateway \($0)" } ?? endpoint
            printLine("Registered: your relay wakes \(shown) when a message arrives, until \(RFC3339.format(expires)).")
        }
    }

    struct Unregister: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Stop your relay from waking your push endpoint.")
        @OptionGroup var options: CommandOptions

        func run(in session: Session) async throws {
            let answer = try await Push.send(try session.app.messages.preparePushUnregistration(), action: "remove the push endpoint")
            let deleted = answer?["deleted"]?.boolValue ?? false
            if options.json { return printJSON(.object(["deleted": .bool(deleted)])) }
            printLine(deleted ? "Unregistered: your relay no longer wakes your push endpoint." : "Your relay had no push endpoint for you.")
        }
    }

    /// Sends `request` to our relay; the answer's JSON object, or a one-line failure (404: the
    /// relay has no push).
    static func send(_ request: PreparedRequest, action: String) async throws -> JSONObject? {
        let result: HTTPResult
        do {
            result = try await RelayHTTP.send(request)
        } catch let failure as NetworkFailure {
            throw CLIFailure("could not \(action): \(failure.description)")
        }
        if result.status == 404 {
            throw CLIFailure("your relay does not offer push (404); coords watch and coords inbox still work by polling")
        }
        guard result.isSuccess else { throw CLIFailure(RelayHTTP.refusal(result, action: action)) }
        // A 2xx without a JSON body has nothing more to show.
        return (try? JSONValue.parse(result.body))?.objectValue
    }
}
