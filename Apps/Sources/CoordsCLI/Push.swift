import ArgumentParser
import CoordsCore

/// `coords push register URL [--ttl SECONDS]` and `coords push unregister`: the push endpoint
/// your relay POSTs a content-free wake to when a message arrives for you (PROTOCOL.md §8.7).
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Let your relay wake a sleeping phone (a UnifiedPush endpoint) when a message arrives.",
        subcommands: [Register.self, Unregister.self])

    struct Register: SessionCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register the URL your relay POSTs a wake to (renewed by `coords watch` on time).",
            discussion: "The relay sends {\"type\":\"coords-wake\"} and nothing else: no sender, no message id, no size.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The endpoint: an https:// URL from the phone's UnifiedPush distributor.") var endpoint: String
        @Option(help: "Seconds the registration lives (60…2592000; the relay's default is 7 days).") var ttl: UInt64?

        func run(in session: Session) async throws {
            let request = try session.app.messages.preparePushRegistration(endpoint: endpoint, ttlSeconds: ttl)
            let answer = try await Push.send(request, action: "register the push endpoint")
            let expires = answer?["expiresAt"]?.uint64Value ?? 0
            if options.json {
                return printJSON(.object(["endpoint": .string(endpoint), "expires_at_ms": .integer(expires.multipliedSaturating(by: 1000))]))
            }
            printLine("Registered: your relay wakes \(endpoint) when a message arrives, until \(RFC3339.format(expires)).")
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
