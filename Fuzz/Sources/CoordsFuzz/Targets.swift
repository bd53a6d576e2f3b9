import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Synchronization

// libFuzzer entry points for every parser and route of CoordsCore and the relay.
//
// One binary; `COORDS_FUZZ_TARGET` picks the target (scripts/fuzz.sh sets it and passes the
// target's corpus under Fuzz/corpus/<target>/). A trap, an ASan report or a failed property
// check (`check`) is a crash that libFuzzer saves as `crash-…`; turn it into a regression test.
@testable import CoordsCore
@testable import CoordsPushGateway
@testable import CoordsRelay

#if canImport(Glibc)
import Glibc
#endif

/// The targets, by name (`scripts/fuzz.sh --list`).
let targets: [String: @Sendable ([UInt8]) -> Void] = [
    "blob-open": blobOpen,
    "friend-link": friendLink,
    "fetch-response": fetchResponse,
    "json": json,
    "relay-upload": { body in relayBody(body) { service in { try await service.upload(body: $0) } } },
    "relay-fetch": { body in relayBody(body) { service in { try await service.fetch(body: $0) } } },
    "relay-delete": { body in relayBody(body) { service in { try await service.delete(body: $0) } } },
    "relay-message-post": { body in relayBody(body) { service in { try await service.postMessage(body: $0, clientAddress: "127.0.0.1") } } },
    "envelope": envelope,
    "mailbox-auth": mailboxAuth,
    "relay-router": relayRouter,
    "cgeo": cgeo,
    "backup": backup,
    "keychain": keychain,
    "store-codecs": storeCodecs,
    "live-frame": liveFrame,
    "push-endpoint": pushEndpoint,
    "rotation": rotation,
    "app-responses": appResponses,
    "postgres-url": postgresURL,
    "client-address": clientAddress,
    "data-file": dataFile,
    "response-limit": responseLimit,
    "sealed-value": sealedValue,
    "server-url": serverURL,
    "outbox-answer": outboxAnswer,
    "prekey-bundle": prekeyBundle,
    "session-message": sessionMessage,
    "ratchet-state": ratchetState,
    "relay-prekeys": relayPrekeys,
    "group-statement": groupStatement,
    "group-message": groupMessage,
    "group-rules": groupRules,
    "attachment": attachment,
    "relay-objects": relayObjects,
    "object-transfer": objectTransfer,
    "qr-code": qrCode,
    "gateway-token": gatewayToken,
    "gateway-router": gatewayRouter,
    "provider-answer": providerAnswer
]

/// A failed property: crash loudly so libFuzzer keeps the input.
func check(_ condition: Bool, _ what: String) {
    guard condition else {
        printError("property failed: \(what)")
        abort()
    }
}

/// Writes a line to standard error.
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Runs async work to completion from libFuzzer's synchronous callback.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

enum Fixture {
    static let name: String = getenv("COORDS_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    /// A fixed identity, so a saved crash input replays the same way.
    static let reader: Ed25519SigningKey = {
        guard let key = try? Ed25519SigningKey(seed: [UInt8](repeating: 7, count: 32)) else { fatalError("libsodium did not start") }
        return key
    }()
    /// A fixed push gateway key (PROTOCOL.md §8.8).
    static let gateway: X25519PrivateKey = {
        guard let key = try? X25519PrivateKey(rawRepresentation: SecretBytes(copying: [UInt8](repeating: 9, count: 32))) else {
            fatalError("libsodium did not start")
        }
        return key
    }()
    static let readerX: X25519PrivateKey = {
        guard let key = try? X25519PrivateKey(ed25519: reader) else { fatalError("libsodium did not start") }
        return key
    }()
    static let service: RelayService = {
        var configuration = RelayConfiguration()
        configuration.addressRate = 0  // limits would turn most inputs into 429 and hide the parsers
        configuration.keyRate = 0
        configuration.messageRate = 0
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        return RelayService(configuration: configuration, store: MemoryRelayStore(), logger: logger)
    }()
    static let responder = buildRouter(service: service).buildResponder()
    /// The push gateway on the fixed key, without providers (a token that opens answers 404
    /// `platform_not_served`) and without rate limits (they would hide the parsers).
    static let gatewayResponder: some HTTPResponder<RelayRequestContext> = {
        var limits = GatewayLimits()
        limits.perTokenPerMinute = 0
        limits.perAddressPerMinute = 0
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let pushGateway = PushGateway(keys: [gateway], providers: [], limits: limits, logger: logger, clock: { 0 })
        return buildGatewayRouter(gateway: pushGateway, addresses: AddressPolicy()).buildResponder()
    }()
    static let keychainPath = "/tmp/coords-fuzz-keychain-\(getpid())"
    /// Where the data-file target writes its `data.mdb`.
    static let dataFileDirectory = "/tmp/coords-fuzz-datafile-\(getpid())"
    /// A store sealer with a fixed DEK and one shred group (id 5) whose key exists.
    static let sealer: StoreSealer = {
        guard let sealer = try? StoreSealer(dek: SecretBytes(copying: [UInt8](repeating: 9, count: 32)), shredKeys: FuzzShredKeys()) else {
            fatalError("libsodium did not start")
        }
        return sealer
    }()
}

/// One shred group key (group 5), fixed, and nothing else.
struct FuzzShredKeys: ShredKeyStore {
    func loadShredKey(_ id: UInt64) throws -> SecretBytes? { id == 5 ? SecretBytes(copying: [UInt8](repeating: 5, count: 32)) : nil }
    func saveShredKey(_ key: SecretBytes, id: UInt64) throws {}
    func deleteShredKey(_ id: UInt64) throws {}
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard targets[Fixture.name] != nil else {
        printError("set COORDS_FUZZ_TARGET to one of: \(targets.keys.sorted().joined(separator: " "))")
        exit(2)
    }
    _ = Fixture.readerX
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    targets[Fixture.name]?(bytes)
    return 0
}

// MARK: Core parsers

@Sendable func blobOpen(_ bytes: [UInt8]) {
    if let location = try? LocationBlob.open(bytes, with: Fixture.readerX) {
        check((try? WireLocation(bytes: location.bytes)) == location, "wire location round trip")
    }
}

/// Push gateway tokens (PROTOCOL.md §8.8): the input as a token, and sealed to the fixture gateway
/// as the plaintext a token carries, so the rules behind the sealed box are reached; whatever
/// opens is 512 bytes and names a platform and a device that pass §8.8's rules.
@Sendable func gatewayToken(_ bytes: [UInt8]) {
    _ = try? PushGatewayToken.open(String(decoding: bytes, as: UTF8.self), with: [Fixture.gateway])
    guard let sealed = try? SealedBox.seal(bytes, to: Fixture.gateway.publicKey) else { return }
    guard let token = try? PushGatewayToken.open(Base64.encode(sealed), with: [Fixture.gateway]) else { return }
    check(bytes.count == PushGatewayToken.plaintextByteCount, "gateway plaintext length")
    let again = try? PushGatewayToken(platform: token.platform, device: token.device, environment: token.environment)
    check(again == token, "gateway token rules")
}

@Sendable func friendLink(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let link = try? FriendLink.parse(text) else { return }
    // A parsed link prints as a link that parses to the same friend.
    let again = try? FriendLink.parse(link.link)
    check(again?.id == link.id && again?.server == link.server && again?.name == link.name, "friend link round trip")
}

/// A relay's answers that the stateless API parses: a fetch response (lenient and strict) and
/// a `GET /api/version` answer.
@Sendable func fetchResponse(_ bytes: [UInt8]) {
    var strict = RelayAPI.FetchOptions()
    strict.requireSignatures = true
    _ = try? RelayAPI.processFetchResponse(bytes, reader: Fixture.readerX)
    _ = try? RelayAPI.processFetchResponse(bytes, reader: Fixture.readerX, options: strict)
    _ = try? RelayAPI.parseVersion(bytes)
}

/// A persistent app for ``appResponses(_:)``: the fixed reader's identity and one friend (seed
/// 9 × 32, the sender of the seeds in Fuzz/corpus/app-responses/), a manual clock a minute
/// after those seeds were made (so their envelope has not expired), places off, no fsync. It
/// keeps its store between inputs, as a phone does; its directory goes at exit.
enum AppFixture {
    static let directory = "/tmp/coords-fuzz-app-\(getpid())"
    static let app: CoordsApp? = {
        removeDirectory()
        atexit { AppFixture.removeDirectory() }
        var options = CoordsApp.Options(keychain: .file(.key(SecretBytes(copying: [UInt8](repeating: 1, count: 32)))))
        options.keychainParameters = .minimum
        options.clock = .manual(ManualClock(milliseconds: 1_795_654_260_000))
        options.places = .none
        options.store.durability = .noSync
        options.logger.logLevel = .critical
        guard let app = try? CoordsApp.open(directory: directory, options: options),
            let friend = try? Ed25519SigningKey(seed: [UInt8](repeating: 9, count: 32))
        else { return nil }
        let ready = Mutex(false)
        blocking {
            let seed = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
            guard (try? await app.wallet.importSeed(seed, name: "Reader", server: "https://relay.example")) != nil,
                (try? await app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "Friend")) != nil
            else { return }
            ready.withLock { $0 = true }
        }
        return ready.withLock { $0 } ? app : nil
    }()

    static func removeDirectory() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A relay's answers to an app, through the managers that store what they bring: an even first
/// byte sends the rest to `LocationManager.processFetchResponse`, an odd one to
/// `MessagesManager.processFetchResponse`. Every fetched entry ends up in exactly one of the
/// outcome's lists; a mailbox answer never gives more acks or results than it had packets.
@Sendable func appResponses(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    guard let app = AppFixture.app else {
        check(false, "the fuzz app did not open")
        return
    }
    let body = Array(bytes.dropFirst())
    blocking {
        if selector & 1 == 0 {
            let entries = (try? RelayAPI.processFetchResponse(body, reader: Fixture.readerX))?.count
            if let outcome = try? await app.location.processFetchResponse(body) {
                let accounted = outcome.updated.count + outcome.unchanged.count + outcome.rejected.count + outcome.ignored.count
                check(accounted == entries, "fetched entries accounted for: \(accounted) of \(entries ?? -1)")
            }
        } else {
            let packets = (try? JSONValue.parse(body))?.objectValue?["packets"]?.arrayValue?.count ?? 0
            if let outcome = try? await app.messages.processFetchResponse(body) {
                check(outcome.acks.count <= packets, "more acks than packets")
                check(outcome.received.count + outcome.duplicates.count + outcome.rejected.count <= packets, "more results than packets")
            }
        }
        while case .update = app.nextUpdate(timeout: .zero) {}  // a phone drains its updates
    }
}

/// A server URL as friends' links, profiles and rotation statements carry it: when it reads,
/// every place that uses it agrees (endpoint, link text, live URL, "the same relay").
@Sendable func serverURL(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let rest = ServerURL.withoutScheme(text)
    guard let url = ServerURL(text) else {
        check((try? RelayAPI.endpoint(server: text, path: "/x")) == nil, "endpoint accepts what ServerURL refuses")
        return
    }
    check(!url.text.hasSuffix("/") && url.rest == rest && ServerURL(url.text) == url, "server URL round trip")
    check((try? RelayAPI.endpoint(server: text, path: "/api/location")) == url.text + "/api/location", "endpoint")
    let live = try? LiveSession.url(server: text)
    check(live == (url.isSecure ? "wss://" : "ws://") + url.rest + LiveFrame.path, "live URL")
}

/// A relay's answer to one outbox request, through the core's decision: byte 0 picks the kind,
/// bytes 1–2 the status (0…999), the rest is the answer's body (and the queued request's body,
/// whose signed time the core reads). The decision is recorded as it says: delivered and dropped
/// entries are gone, retried ones wait until the time given, and a reason stays short (the
/// relay's code and message are cut: at most about 600 characters, whatever the relay sent).
@Sendable func outboxAnswer(_ bytes: [UInt8]) {
    guard bytes.count >= 3, let app = AppFixture.app else { return }
    let kinds = OutboxKind.allCases
    let kind = kinds[Int(bytes[0]) % kinds.count]
    let status = (Int(bytes[1]) << 8 | Int(bytes[2])) % 1000
    let body = Array(bytes.dropFirst(3))
    let request = PreparedRequest(url: "https://relay.example/api/location", method: "PUT", headers: [], body: body)
    blocking {
        guard let id = try? await app.outbox.enqueue(kind: kind, request: request, reference: "1795654200000") else { return }
        guard let report = try? await app.outbox.report(id: id, status: status, body: body) else {
            check(false, "report threw")
            return
        }
        let left = (try? app.outbox.pending())?.first { $0.id == id }
        switch report.decision {
        case .delivered, .dropped, .unknown: check(left == nil, "a finished entry stays queued: \(report)")
        case .retry(let at, let reason), .signAgain(let at, let reason):
            check(left?.item.nextAttemptAt == at, "the retry time is recorded")
            check(reason.count <= 640, "a reason of \(reason.count) characters")
        }
        if case .dropped(let reason) = report.decision { check(reason.count <= 640, "a reason of \(reason.count) characters") }
        for entry in (try? app.outbox.pending()) ?? [] { try? await app.outbox.remove(id: entry.id) }  // the next input starts empty
        while case .update = app.nextUpdate(timeout: .zero) {}
    }
}

@Sendable func json(_ bytes: [UInt8]) {
    guard let value = try? JSONValue.parse(bytes) else { return }
    let serialized = value.serialized()
    check((try? JSONValue.parse(serialized)) == value, "JSON serialize/parse round trip")
    // The options hosts pass to coords_app_open (C ABI arguments are untrusted too).
    if var object = value.objectValue {
        object["places"] = nil  // a path would make the fuzzer read arbitrary files
        _ = try? CoordsApp.Options(json: object)
    }
}

@Sendable func envelope(_ bytes: [UInt8]) {
    guard let value = try? JSONValue.parse(bytes), let envelope = try? Envelope(json: value) else {
        _ = try? RFC3339.parse(String(decoding: bytes, as: UTF8.self))
        _ = try? MessagePayload(json: bytes)
        return
    }
    _ = try? RFC3339.parse(envelope.createdAt)
    _ = try? RFC3339.parse(envelope.expiresAt)
    if let keyText = envelope.senderKey, let raw = try? Base64.decode(keyText, field: "senderKey"),
        let key = try? Ed25519PublicKey(rawRepresentation: raw)
    {
        try? envelope.verify(senderKey: key)
        _ = try? envelope.open(as: Fixture.reader, from: key, now: 1_800_000_000)
    }
    _ = try? envelope.open(as: Fixture.reader, from: Fixture.reader.publicKey, now: .max)
}

// MARK: Relay

func relayBody(_ body: [UInt8], _ route: @escaping @Sendable (RelayService) -> @Sendable ([UInt8]) async throws -> RelayReply) {
    blocking {
        let reply = await Fixture.service.reply { try await route(Fixture.service)(body) }
        check(reply.status != 500, "relay answered 500 to a request body")
    }
}

/// One live-channel frame (§8): the shared parser (a parsed frame must re-encode to itself), then
/// the relay's handling of it on a fresh live connection, which must never trap and must leave
/// nothing behind once the connection is gone.
@Sendable func liveFrame(_ bytes: [UInt8]) {
    if let frame = try? LiveFrame(parsing: bytes) {
        check((try? LiveFrame(parsing: Array(frame.text.utf8))) == frame, "a parsed live frame does not re-encode to itself")
    }
    // The same bytes as another node's NOTIFY payload (§8.6): parsed, and re-encoded to itself.
    if let (node, announcement) = LiveAnnouncement.parse(String(decoding: bytes, as: UTF8.self)) {
        check(LiveAnnouncement.parse(announcement.payload(from: node))?.announcement == announcement, "a live announcement does not re-encode to itself")
    }
    blocking {
        let hub = Fixture.service.live
        guard let subscriber = try? hub.connect(address: "127.0.0.1") else {
            check(false, "the fuzz relay refused a live connection")
            return
        }
        _ = await Fixture.service.liveReceive(bytes, from: subscriber)
        hub.disconnect(subscriber)
        check(hub.counts.connections == 0 && hub.counts.keys == 0, "a live connection left state behind")
    }
}

/// Lines: request target, X-Coords-Key, X-Coords-Timestamp, X-Coords-Signature (any may be
/// missing). A timestamp line of one byte picks a numeric edge value instead.
@Sendable func mailboxAuth(_ bytes: [UInt8]) {
    let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let target = lines.first ?? ""
    var headers: [String: String] = [:]
    if lines.count > 1 { headers["x-coords-key"] = lines[1] }
    if lines.count > 2 {
        let edges: [UInt64] = [0, 1, .max, .max - 1, .max - 299, UInt64(Int64.max), UInt64(Int64.max) + 1, 1_800_000_000]
        let line = lines[2]
        headers["x-coords-timestamp"] = line.utf8.count == 1 ? String(edges[Int(line.utf8.first ?? 0) % edges.count]) : line
    }
    if lines.count > 3 { headers["x-coords-signature"] = lines[3] }
    let signedHeaders = headers
    blocking {
        let headers = signedHeaders
        let service = Fixture.service
        let list = await service.reply { try await service.listMessages(pathWithQuery: target, query: queryItems(target), headers: headers) }
        check(list.status != 500, "mailbox list answered 500")
        let id = lines.count > 4 ? lines[4] : "00000000-0000-4000-8000-000000000000"
        let ack = await service.reply { try await service.acknowledgeMessage(id: id, method: "POST", pathWithQuery: target, headers: headers) }
        check(ack.status != 500, "mailbox ack answered 500")
    }
}

/// The whole router in process: `METHOD TARGET\n`, header lines `Name: value\n`, a blank line,
/// then the body.
/// An HTTP request from fuzz bytes: a request line, header lines, an empty line, the body.
func fuzzedRequest(_ bytes: [UInt8], authority: String) -> (HTTPRequest, [UInt8]) {
    var lines: [String] = []
    var index = 0
    var body: [UInt8] = []
    while index < bytes.count {
        guard let end = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) else {
            lines.append(String(decoding: bytes[index...], as: UTF8.self))
            index = bytes.count
            break
        }
        let line = String(decoding: bytes[index..<end], as: UTF8.self)
        index = end + 1
        if line.isEmpty, !lines.isEmpty {
            body = Array(bytes[index...])
            break
        }
        lines.append(line)
    }
    let requestLine = (lines.first ?? "GET /").split(separator: " ", maxSplits: 1).map(String.init)
    let method = HTTPRequest.Method(requestLine.first ?? "GET") ?? .get
    let path = requestLine.count > 1 ? requestLine[1] : "/"
    var fields = HTTPFields()
    for line in lines.dropFirst() {
        let parts = line.split(separator: ":", maxSplits: 1).map { String($0) }
        guard parts.count == 2, let name = HTTPField.Name(parts[0]) else { continue }
        let value = parts[1].drop { $0 == " " }
        fields.append(HTTPField(name: name, value: String(value)))
    }
    return (HTTPRequest(method: method, scheme: "http", authority: authority, path: path, headerFields: fields), body)
}

@Sendable func relayRouter(_ bytes: [UInt8]) {
    let (head, body) = fuzzedRequest(bytes, authority: "relay")
    let method = head.method
    let path = head.path ?? "/"
    let requestBody = body
    blocking {
        let body = requestBody
        let request = Request(head: head, body: .init(buffer: ByteBuffer(bytes: body)))
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let context = RelayRequestContext(source: .init(channel: NIOAsyncTestingChannel(), logger: logger))
        do {
            let response = try await Fixture.responder.respond(to: request, context: context)
            check(response.status.code != 500, "router answered 500 to \(method) \(path.prefix(80))")
        } catch {
            check(false, "router threw instead of answering: \(error)")
        }
    }
}

/// The relay's `--postgres` URL: parsing never traps, and neither a parsed location's
/// ``PostgresLocation/redacted`` nor an error ever shows the URL's password.
@Sendable func postgresURL(_ bytes: [UInt8]) {
    let url = String(decoding: bytes, as: UTF8.self)
    // The password as the parser reads it: after the scheme, before the query and the path, then
    // before the last "@" and after the first ":".
    var authority = url.range(of: "://").map { url[$0.upperBound...] } ?? url[...]
    authority = authority.prefix { $0 != "?" }.prefix { $0 != "/" }
    let credentials = authority.lastIndex(of: "@").map { authority[..<$0] } ?? ""
    let secret = credentials.firstIndex(of: ":").map { credentials[credentials.index(after: $0)...] } ?? ""
    // Short or repeated passwords would also match text that is not the password.
    let checkable = secret.count >= 6 && url.components(separatedBy: secret).count == 2
    do {
        let location = try PostgresLocation(url: url, environmentPassword: "env")
        check((1...65535).contains(location.port) && !location.host.isEmpty, "a parsed URL has a host and a port in range")
        if checkable { check(!location.redacted.contains(secret), "the redacted URL shows the password") }
    } catch {
        check(error is RelayStoreError, "a URL refusal is a RelayStoreError")
        // A refusal's own words may contain the password's text ("postgres" in "must start with
        // postgres://"): the same URL with the password masked shows which words are the message's.
        if checkable {
            let mask = String(repeating: secret.first == "a" ? "b" : "a", count: secret.count)
            var template = ""
            // (components, not replacingOccurrences: Foundation's replace traps on text with NUL characters)
            let masked = url.components(separatedBy: String(secret)).joined(separator: mask)
            do { _ = try PostgresLocation(url: masked, environmentPassword: "env") } catch {
                template = "\(error)"
            }
            if !template.contains(secret) { check(!"\(error)".contains(secret), "a URL refusal shows the password") }
        }
    }
}

// MARK: Files

@Sendable func cgeo(_ bytes: [UInt8]) {
    guard let index = try? PlaceIndex(bytes: bytes) else { return }
    for (latitude, longitude) in [(0.0, 0.0), (89.9, 179.9), (-45.0, -170.0)] {
        _ = try? index.nearestPlace(latitude: latitude, longitude: longitude)
    }
}

/// Files name their own Argon2id cost; keep a fuzz run fast by lowering a valid cost at
/// `offset` to the minimum (invalid ones stay, so the range checks are fuzzed too).
func cheapenArgon2(_ bytes: inout [UInt8], at offset: Int) {
    guard bytes.count >= offset + 16 else { return }
    let ops = bytes[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let memory = bytes[offset + 8..<offset + 16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    guard (try? Argon2id.Parameters(opsLimit: ops, memLimitBytes: memory).validate()) != nil else { return }
    var writer = ByteWriter()
    writer.write(UInt64(1))
    writer.write(UInt64(8192))
    bytes.replaceSubrange(offset..<offset + 16, with: writer.bytes)
}

@Sendable func backup(_ bytes: [UInt8]) {
    var bytes = bytes
    cheapenArgon2(&bytes, at: 9)
    _ = try? Backup.open(bytes, passphrase: "fuzz")
}

@Sendable func keychain(_ bytes: [UInt8]) {
    var bytes = bytes
    cheapenArgon2(&bytes, at: 6)
    let path = Fixture.keychainPath
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    if let chain = try? FileKeychain(path: path, unlock: .key(SecretBytes(copying: [UInt8](repeating: 1, count: 32)))) {
        _ = try? chain.load(name: "identity")
    }
    _ = try? FileKeychain(path: path, unlock: .passphrase("fuzz"), parameters: .minimum)
    unlink(path)
}

/// First byte: the type; the rest: its stored bytes. Decoded values must re-encode to bytes
/// that decode to the same value.
@Sendable func storeCodecs(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let payload = Array(bytes.dropFirst())
    func roundTrip<T: StoreCodable & Equatable>(_: T.Type) {
        guard let value = payload.withUnsafeBytes({ try? T(storeBytes: $0) }) else { return }
        let again = try? value.withStoreBytes { try T(storeBytes: $0) }
        check(again == value, "\(T.storeTypeName) round trip")
    }
    // Index = selector % count; the order is the corpus's (selector 11 was Int64 before 12 existed).
    let codecs: [any (StoreCodable & Equatable).Type] = [
        RelayRecord.self, Tombstone.self, MailboxEntry.self, FriendRecord.self, CachedLocation.self, UploadState.self,
        OutboxItem.self, MessageRecord.self, String.self, Bytes32.self, UInt64.self, Int64.self, PushRegistration.self
    ]
    let codec = codecs[Int(selector) % codecs.count]  // bound first: Swift opens the existential only from a plain value
    roundTrip(codec)
}

/// A push registration body (§8.7) and the endpoint rule: parsing never traps, a parsed
/// endpoint keeps its text and a port in range, and an address is classified the same in its
/// IPv4 and IPv4-mapped IPv6 forms.
@Sendable func pushEndpoint(_ bytes: [UInt8]) {
    var limits = PushLimits()
    limits.allowLoopback = bytes.first.map { $0 & 1 == 1 } ?? false
    if let (endpoint, ttl) = try? RelayService.parseRegistration(bytes, limits: limits) {
        check((1...65535).contains(endpoint.port) && !endpoint.host.isEmpty, "a parsed endpoint has a host and a port in range")
        check((limits.minimumTTLSeconds...limits.maximumTTLSeconds).contains(ttl), "a parsed ttl is in range")
    }
    let text = String(decoding: bytes, as: UTF8.self)
    for insecure in [false, true] {
        if let endpoint = try? PushEndpoint(parsing: text, allowInsecure: insecure) {
            check(endpoint.url == text && (endpoint.secure || insecure), "a parsed endpoint is its own text, https unless allowed")
        }
    }
    if bytes.count >= 4, let v4 = IPAddress(bytes: Array(bytes.prefix(4))),
        let mapped = IPAddress(bytes: [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + Array(bytes.prefix(4)))
    {
        for loopback in [false, true] {
            check(
                EndpointPolicy.isPublic(v4, allowLoopback: loopback) == EndpointPolicy.isPublic(mapped, allowLoopback: loopback),
                "IPv4 and IPv4-mapped forms are classified alike")
        }
    }
    if bytes.count >= 16, let v6 = IPAddress(bytes: Array(bytes.prefix(16))) {
        _ = EndpointPolicy.isPublic(v6, allowLoopback: false)
        _ = v6.description
    }
}

/// A rotation statement (§9.1) in a payload: parsing never traps, a parsed statement re-encodes
/// to itself, and verification of whatever was parsed never traps either.
@Sendable func rotation(_ bytes: [UInt8]) {
    guard let value = try? JSONValue.parse(bytes) else { return }
    let candidates = [value, value.objectValue?["rotation"]].compactMap { $0 }
    for candidate in candidates {
        guard let statement = try? RotationStatement(json: candidate) else { continue }
        check((try? RotationStatement(json: statement.json)) == statement, "a parsed rotation statement re-encodes to itself")
        _ = try? statement.verify()
    }
    if let payload = try? MessagePayload(json: bytes) {
        check((try? MessagePayload(json: payload.json)) == payload, "a parsed payload re-encodes to itself")
    }
}

/// A relay's prekey bundle answer (§10.2): parsing never traps, a parsed bundle re-encodes to
/// itself, and verification at any time (from the input) never traps.
@Sendable func prekeyBundle(_ bytes: [UInt8]) {
    guard let bundle = try? PrekeyBundle(json: bytes) else { return }
    check((try? PrekeyBundle(json: bundle.json.serialized())) == bundle, "a parsed bundle re-encodes to itself")
    let now = bytes.reduce(UInt64(0)) { $0 &* 31 &+ UInt64($1) }
    _ = try? bundle.verify(for: bundle.identity, now: now, cached: bundle.signedPrekey)
    _ = try? bundle.verify(for: Fixture.reader.publicKey, now: now)
}

/// A version-3 sealed payload (§10.7): parsing never traps and re-encodes to the same bytes;
/// opening it in a fixed session never traps, and a payload that does not open leaves the
/// session exactly as it was.
@Sendable func sessionMessage(_ bytes: [UInt8]) {
    guard let message = try? SessionMessage(payload: bytes) else { return }
    check(message.payload == bytes, "a parsed session message re-encodes to its bytes")
    var session = Fixture.session
    let before = session.serialized()
    let context = SessionContext(sender: Fixture.reader.publicKey, recipient: Fixture.reader.publicKey, envelopeAssociatedData: [])
    if (try? session.open(message, context: context, now: 1, using: SeededRandomSource(seed: 1))) == nil {
        check(session.serialized() == before, "a message that does not open changes nothing")
    }
}

/// A stored session (§10.10, bytes from disk): reading never traps, and what reads writes back
/// to the same bytes.
@Sendable func ratchetState(_ bytes: [UInt8]) {
    let stored = SecretBytes(copying: bytes)
    guard let session = try? RatchetSession(serialized: stored) else { return }
    check(session.serialized() == stored, "a stored session re-encodes to its bytes")
}

extension Fixture {
    /// A responder session on fixed keys that has opened one message (so it has both chains).
    static let session: RatchetSession = {
        do {
            let random = SeededRandomSource(seed: 41)
            let signed = try X25519PrivateKey.generate(using: random)
            let base = try X25519PrivateKey.generate(using: random)
            let bundle = PrekeyBundle(
                identity: reader.publicKey, signedPrekey: SignedPrekey.make(id: 1, key: signed.publicKey, created: 0, identity: reader),
                oneTimePrekey: nil)
            let handshake = SessionMessage.Handshake(signedPrekeyID: 1, oneTimePrekeyID: nil, baseKey: base.publicKey)
            let sk = try X3DH.initiate(identity: reader, bundle: bundle, baseKey: base)
            var initiator = try RatchetSession.initiate(
                sharedSecret: sk, remoteSignedPrekey: signed.publicKey, handshake: handshake, now: 0, using: random)
            let context = SessionContext(sender: reader.publicKey, recipient: reader.publicKey, envelopeAssociatedData: [])
            let first = try initiator.seal([1, 2, 3], context: context, now: 0)
            var responder = RatchetSession.respond(sharedSecret: sk, signedPrekey: signed, handshake: handshake, now: 0)
            _ = try responder.open(first, context: context, now: 0, using: random)
            return responder
        } catch {
            fatalError("the fuzz session fixture failed: \(error)")
        }
    }()
}

/// A prekey upload body as the relay reads it (§10.3): never traps, answers 400/401 for
/// anything wrong; what it accepts verifies under the owner and re-encodes to itself.
@Sendable func relayPrekeys(_ bytes: [UInt8]) {
    let now: UInt64 = 1_800_000_000_000
    do {
        let (signed, oneTime) = try RelayService.parsePrekeyUpload(bytes, owner: Fixture.reader.publicKey, now: now)
        check((try? signed.verify(owner: Fixture.reader.publicKey, now: now)) != nil, "an accepted signed prekey verifies")
        check(oneTime.count <= ForwardSecrecy.oneTimePrekeyBatch, "at most one batch of one-time prekeys")
        check((try? SignedPrekey(json: signed.json)) == signed, "an accepted signed prekey re-encodes to itself")
    } catch let failure as RelayFailure {
        check([400, 401].contains(failure.status), "a bad prekey upload is 400 or 401, got \(failure.status)")
    } catch {
        check(false, "a prekey upload threw \(error)")
    }
}

/// §12.4 objects: the PUT query and Range parsers never trap and accept only their one form; and a
/// run of parts, reads, deletes and sweeps (two owners, three ids, sizes and offsets from the
/// input) against a memory store keeps every record consistent: a prefix stored, never more than
/// the object's size, reads returning exactly the stored bytes, refusals changing nothing.
@Sendable func relayObjects(_ bytes: [UInt8]) {
    let text = String(decoding: bytes.prefix(96), as: UTF8.self)
    if let query = try? ObjectPutQuery(target: "/v1/relay/objects/x?" + text) {
        check("offset=\(query.offset)&stored=\(query.size)&expires=\(query.expiresAt)" == text, "an accepted query is its one form")
    }
    if let from = RelayService.rangeStart(text) { check(text == "bytes=\(from)-", "an accepted range is bytes=N-") }
    let store = MemoryRelayStore()
    // Operations of 5 bytes: `op u8 | a u16 BE | b u16 BE`.
    var parsed: [(UInt8, UInt16, UInt16)] = []
    var i = 0
    while i + 5 <= bytes.count {
        let a = UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i + 2])
        let b = UInt16(bytes[i + 3]) << 8 | UInt16(bytes[i + 4])
        parsed.append((bytes[i], a, b))
        i += 5
    }
    let operations = parsed
    blocking {
        var limits = ObjectLimits()
        limits.quotaBytes = 4_000
        limits.maximumObjectsPerOwner = 2
        limits.maximumTotalBytes = 6_000
        // Both are valid: 32 and 16 bytes.
        let owners = (0..<2).compactMap { try? Bytes32([UInt8](repeating: UInt8($0), count: 32)) }
        let ids = (0..<3).compactMap { try? ObjectID(bytes: [UInt8](repeating: UInt8($0), count: 16)) }
        guard owners.count == 2, ids.count == 3 else { return }
        var now: UInt64 = 100
        for (op, a, b) in operations {
            let id = ids[Int(op >> 2) % ids.count]
            let owner = owners[Int(op >> 4) & 1]
            let before = await store.objectInfo(id, now: now)
            switch op & 3 {
            case 0:
                let size = UInt64(b % 3_000) + 16
                let offset = UInt64(a % 3_100)
                let count = Int(min(UInt64(b >> 4) % 600, size.subtractingSaturating(offset)))
                let part = ObjectPart(
                    object: id, owner: owner, offset: offset, size: size, expiresAt: now + UInt64(op >> 5) + 1,
                    bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: offset), count: count))
                let result = await store.objectPut(part, limits: limits, now: now)
                let after = await store.objectInfo(id, now: now)
                if case .stored(let record) = result {
                    check(record.stored <= record.size && after == record, "a stored part leaves a consistent record")
                    check(record.stored == offset + UInt64(count), "the record ends where the part ends")
                } else {
                    check(after == before, "a refused part changes nothing")
                }
            case 1:
                let read = await store.objectRead(id, offset: UInt64(a % 3_100), count: Int(b % 4_000))
                if let record = before {
                    let expected = UInt64(b % 4_000) > 0 ? min(UInt64(b % 4_000), record.stored.subtractingSaturating(UInt64(a % 3_100))) : 0
                    check(UInt64(read.count) == expected, "a read returns exactly the stored bytes in its window")
                }
            case 2:
                let result = await store.objectDelete(id, owner: owner, now: now)
                check((result == .deleted) == (before?.owner == owner), "only the owner deletes, and only what exists")
            default:
                now += UInt64(a % 8)
                _ = await store.objectSweep(now: now)
                check(await store.objectInfo(id, now: now).map { $0.expiresAt > now } ?? true, "nothing expired is served")
            }
        }
    }
}

/// A hostile relay's answers to an upload (§12.4) and to a download: `status u16 | body`. The
/// upload never traps, moves only to a stored length an honest relay could report, and stays
/// where it was on any error; a download checks the status and refuses bytes that do not open.
@Sendable func objectTransfer(_ bytes: [UInt8]) {
    guard bytes.count >= 2, let object = try? ObjectID(bytes: [UInt8](repeating: 1, count: 16)),
        var upload = try? ObjectUpload(
            server: "https://relay.example", signer: Fixture.reader, key: SecretBytes(copying: [UInt8](repeating: 2, count: 32)),
            object: object, size: 500_000, expiresAt: 2_000_000_000, partChunks: 2)
    else { return }
    let status = Int(bytes[0]) << 8 | Int(bytes[1])
    let body = Array(bytes.dropFirst(2))
    let before = upload.need
    do {
        if case .stored(let stored) = try upload.handle(status: status, body: body, retryAfter: String(decoding: body.prefix(8), as: UTF8.self)) {
            check(stored <= upload.storedSize && (stored == upload.storedSize || stored % 65_552 == 0), "an accepted stored length is a chunk boundary")
        }
    } catch {
        check(upload.need == before, "a refused answer moves nothing")
    }
    guard
        let download = try? ObjectDownload(
            server: "https://relay.example",
            file: FileAttachment(
                object: object, size: 100, type: "text/plain", name: "a", digest: [UInt8](repeating: 0, count: 32),
                key: SecretBytes(copying: [UInt8](repeating: 2, count: 32)), expiresAt: 1))
    else { return }
    var opening = download
    switch try? opening.check(status: status, retryAfter: String(decoding: body.prefix(24), as: UTF8.self)) {
    case .body: check(status == 200, "a fresh download reads the body of a 200 alone")
    case .retry(let seconds):
        check(status == 429 || (500...599).contains(status), "only 429 and 5xx are retried")
        check((1...TransferPace.maximumWaitSeconds).contains(seconds), "a retry waits 1…60 s")
    case nil: break
    }
    // A Content-Length is accepted only when it is exactly what was asked for (the stored length).
    let length = String(decoding: body.prefix(24), as: UTF8.self)
    if (try? opening.check(contentLength: length)) != nil {
        check(UInt64(length.filter { $0 != " " && $0 != "\t" }) == opening.storedSize, "only the length asked for is read")
    }
    var out: [UInt8] = []
    if (try? body.withUnsafeBytes { try opening.take($0, appendingTo: &out) }) != nil, (try? opening.finish()) != nil {
        check(false, "bytes under another digest opened")
    }
}

/// The QR encoder on any bytes (the C ABI hands it any text), with any version and mask asked
/// for: never traps; what fits is a square of 17 + 4·version modules; a refusal names why.
@Sendable func qrCode(_ bytes: [UInt8]) {
    let forced = bytes.first.map { Int($0) % 3 == 0 }
    let data = Array(bytes.dropFirst(forced == true ? 3 : 0))
    let version = forced == true && bytes.count > 1 ? Int(bytes[1]) % 12 : nil
    let mask = forced == true && bytes.count > 2 ? Int(bytes[2]) % 9 : nil
    do {
        let code = try QRCode(bytes: data, version: version, mask: mask)
        check(code.size == 17 + 4 * code.version && code.modules.count == code.size * code.size, "a square of the version's size")
        check(data.count <= QRCode.maximumBytes, "only what fits is encoded")
        _ = code.svg(modulePixels: Int(bytes.last ?? 0) - 100, quietZone: Int(bytes.first ?? 0) - 128)
        _ = code.render(ansi: bytes.count % 2 == 0, quietZone: Int(bytes.last ?? 0) - 128)
    } catch let failure as QRCode.Failure {
        switch failure {
        case .tooLong(let count, let maximum): check(count == data.count && count > maximum, "too long only when it is")
        case .invalidVersion(let v): check(!(1...10).contains(v), "a valid version refused")
        case .invalidMask(let m): check(!(0...7).contains(m), "a valid mask refused")
        }
    } catch {
        check(false, "an error that is not a QRCode.Failure: \(error)")
    }
}

// MARK: Entry point

/// libFuzzer's driver (from `-sanitize=fuzzer`), for when SwiftPM renames the executable's
/// `main` to `CoordsFuzz_main` (debug builds link executables as testable).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("CoordsFuzz_main")
public func coordsFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzerTestOneInput(data, size) }
}

/// The per-address key of a request (issue 37): the first byte picks the IPv6 prefix, the rest is
/// `peer|X-Forwarded-For|trusted proxy`. Never traps; the key is "unknown", dotted IPv4, or an
/// IPv6 prefix ending in `/<length>`; an untrusted peer's header never counts.
@Sendable func clientAddress(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let parts = String(decoding: bytes.dropFirst(), as: UTF8.self).split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
    var policy = AddressPolicy()
    policy.ipv6PrefixLength = Int(first % 130)  // 0 and 129 too: clamped, never a trap
    policy.trustForwardedFor = first & 1 == 1
    if parts.count > 2, let network = IPNetwork(String(parts[2])) { policy.trustedProxies = [network] }
    let peer = parts.first.map(String.init)
    let forwarded = parts.count > 1 ? String(parts[1]) : nil
    let key = policy.key(forwardedFor: forwarded, remoteAddress: peer)
    check(key == "unknown" || key.contains("/") || key.split(separator: ".").count == 4, "a key is unknown, IPv4 or an IPv6 prefix")
    let withoutHeader = policy.key(forwardedFor: nil, remoteAddress: peer)
    if let peer, let address = IPAddress(parsing: Substring(peer)), !policy.trusts(address) {
        check(key == withoutHeader, "an untrusted peer's X-Forwarded-For changed the key")
    }
}

/// A `data.mdb` of any bytes is checked before LMDB would map it (issue 37): the check never
/// traps, and passes a non-empty file only when the file holds every page its meta pages name.
@Sendable func dataFile(_ bytes: [UInt8]) {
    let directory = Fixture.dataFileDirectory
    mkdir(directory, 0o700)
    let path = directory + "/data.mdb"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    let problem = DataFileCheck.problem(directory: directory)
    if problem == nil, !bytes.isEmpty {
        check(bytes.count >= 2 * 512, "a file shorter than two meta pages passed")
    }
}

/// A stored value of the sealed store (docs/STORE.md) as a hostile file would hold it: the first
/// byte picks the key visibility, the next 16 are the stored key, the rest the stored value.
/// Opening never traps and never succeeds on bytes nobody sealed; splitting an opened value never
/// traps; a value sealed here opens to its plaintext, and with any one bit flipped does not.
@Sendable func sealedValue(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let visibility: KeyVisibility = [.hidden, .visible, .hiddenPrefix(4)][Int(selector) % 3]
    let storedKey = Array(bytes.dropFirst().prefix(16))
    let stored = Array(bytes.dropFirst(17))
    let sealer = Fixture.sealer
    let forged = try? stored.withUnsafeBytes { v in
        try storedKey.withUnsafeBytes { k in try sealer.open(table: "fuzz", storedKey: k, stored: v) { plain, _ in Array(plain) } }
    }
    check(forged == nil, "bytes nobody sealed opened")
    _ = try? stored.withUnsafeBytes { try TransactionState.split($0, visibility: visibility, table: "fuzz") }
    // A genuine value: sealed under the DEK or shred group 5, opened, then one bit flipped.
    let shred: UInt64? = selector & 0x80 == 0 ? nil : 5
    guard
        let sealed = try? stored.withUnsafeBytes({ plain in
            try storedKey.withUnsafeBytes { k in try sealer.seal(table: "fuzz", storedKey: k, plaintext: plain, shred: shred) { Array($0) } }
        })
    else { return check(false, "sealing failed") }
    let opened = try? sealed.withUnsafeBytes { v in
        try storedKey.withUnsafeBytes { k in try sealer.open(table: "fuzz", storedKey: k, stored: v) { plain, group in (Array(plain), group) } }
    }
    check(opened?.0 == stored && opened?.1 == shred, "a sealed value opens to its plaintext and group")
    var flipped = sealed
    let bit = Int(selector) % (flipped.count * 8)
    flipped[bit / 8] ^= UInt8(1) << (bit % 8)
    let tampered = try? flipped.withUnsafeBytes { v in
        try storedKey.withUnsafeBytes { k in try sealer.open(table: "fuzz", storedKey: k, stored: v) { _, _ in true } }
    }
    check(tampered == nil, "a value with a flipped bit opened")
}

/// The answer cap of any method and URL (PROTOCOL.md §4.1): one of the three limits, never a trap.
@Sendable func responseLimit(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let (method, url) = text.split(separator: " ", maxSplits: 1).map(String.init).splitFirst
    let limit = ClientLimits.maximumResponseBytes(method: method, url: url)
    check([ClientLimits.smallAnswerBytes, ClientLimits.fetchAnswerBytes, ClientLimits.mailboxAnswerBytes].contains(limit), "an unknown limit")
}

extension Array where Element == String {
    /// The first element and the second (empty strings when missing).
    fileprivate var splitFirst: (String, String) { (first ?? "", count > 1 ? self[1] : "") }
}

// MARK: Groups (PROTOCOL.md §11)

/// A membership statement from the wire: parsing never traps; what parses re-encodes to its bytes,
/// reads back from the store the same way, and its authority and change over a fixed state are
/// decided without a trap.
@Sendable func groupStatement(_ bytes: [UInt8]) {
    guard let statement = try? GroupStatement(bytes: bytes) else { return }
    check(statement.bytes == bytes, "a parsed statement keeps its bytes")
    check((try? GroupStatement(storedBytes: bytes)) == statement, "a stored statement reads back the same")
    check(statement.state.members.count <= Groups.maximumMembers && statement.state.members.contains(where: \.isAdmin), "a valid state")
    _ = try? statement.checkAuthority(over: GroupFixture.state)
    let change = statement.change(from: GroupFixture.state)
    check(change.added.allSatisfy { statement.state.contains($0) }, "added members are members")
}

/// A group message from the wire: parsing never traps and re-encodes to its bytes; checking its
/// chain signature and opening it with a fixed key never trap.
@Sendable func groupMessage(_ bytes: [UInt8]) {
    guard let message = try? GroupMessage(bytes: bytes) else { return }
    check(message.bytes == bytes, "a parsed group message re-encodes to its bytes")
    _ = try? message.verify(sender: Fixture.reader.publicKey, signingKey: Fixture.reader.publicKey)
    _ = try? message.open(sender: Fixture.reader.publicKey, messageKey: GroupFixture.messageKey)
}

/// The §11.4 rules on the fuzz app: each 4-byte step makes a statement (author, predecessor,
/// epoch step, members and admins chosen by the bytes, signed here by fixed keys) and hands it to
/// the app as its friend's `group-statement`. Whatever arrives, in whatever order: no trap, and
/// the group's record stays consistent (a head, members and admins from the statements' keys,
/// the user a member exactly when the status says so, at most 16 × 4 statements kept).
@Sendable func groupRules(_ bytes: [UInt8]) {
    guard let app = AppFixture.app, let identity = try? app.context.identity.get() else {
        check(false, "the fuzz app did not open")
        return
    }
    let group = GroupFixture.group
    var made: [GroupStatement] = []
    var index = 0
    while index + 4 <= bytes.count {
        let (who, from, step, sets) = (bytes[index], bytes[index + 1], bytes[index + 2], bytes[index + 3])
        index += 4
        let keys = GroupFixture.keys
        let author = keys[Int(who) % keys.count]
        var members: [GroupMember] = []
        for (position, key) in keys.enumerated() where sets & (1 << position) != 0 {
            members.append(GroupMember(key: key.publicKey, isAdmin: (step >> 4) & (1 << (position % 4)) != 0 || position == Int(who) % keys.count))
        }
        guard let state = try? GroupState(name: "g\(sets)", members: members) else { continue }
        let previous = made.isEmpty || from & 0x80 != 0 ? nil : made[Int(from) % made.count]
        let epoch = previous.map { $0.epoch &+ UInt32(step & 3) } ?? UInt32(step & 3)
        let hash = previous?.hash ?? [UInt8](repeating: 0, count: 32)
        guard
            let statement = try? GroupStatement.make(
                group: group, epoch: epoch, previous: epoch == 0 ? [UInt8](repeating: 0, count: 32) : hash, author: author, at: 1, state: state)
        else { continue }
        made.append(statement)
        let carried = made.suffix(Int(from % 4) + 1).map { JSONValue.string(Base64.encode($0.bytes)) }
        let payload = MessagePayload(
            kind: "group-statement", id: "00000000-0000-4000-8000-000000000000", text: "", sentAt: 1,
            extra: JSONObject([("group", .string(group.base64URL)), ("statements", .array(Array(carried)))]))
        var updates: [GroupsManagerReconcileMessage] = []
        _ = try? app.context.database.write { tx in
            _ = try GroupsManager.processStatements(
                tx, payload, sender: GroupFixture.keys[0].publicKey, identity: identity, now: 1, random: SeededRandomSource(seed: 3),
                messages: &updates)
        }
    }
    _ = try? app.context.database.read { tx in
        guard let record = try tx.open(Tables.groups).get(group.bytes) else { return }
        check(!record.heads.isEmpty, "a kept group has a head")
        check(record.members.count <= Groups.maximumMembers, "at most 256 members")
        check(record.status != .member || record.isMember(identity.id), "a member is in the members")
        let kept = try tx.open(Tables.groupStatements).entries(prefix: group.bytes).count
        check(kept <= Int(Groups.epochsKept) * Groups.maximumForks, "statements kept are bounded: \(kept)")
        let pending = try tx.open(Tables.groupPending).entries(prefix: group.bytes).count
        check(pending <= Groups.maximumPending, "pending statements are bounded: \(pending)")
    }
    // Start over for the next input (the store is shared): forget the group.
    _ = try? app.context.database.write { tx in
        try GroupsManager.forgetStatements(tx, group)
        try tx.open(Tables.groups).delete(group.bytes)
        try GroupsManager.eraseChains(tx, group, members: GroupFixture.keys.map(\.publicKey) + [identity.publicKey])
    }
}

enum GroupFixture {
    /// The app's friend (seed 9, an admin candidate), the app's own identity (seed 7) and four others.
    static let keys: [Ed25519SigningKey] = [9, 7, 11, 12, 13, 14].compactMap { try? Ed25519SigningKey(seed: [UInt8](repeating: $0, count: 32)) }
    static let group: GroupID = {
        guard let id = try? GroupID(bytes: [UInt8](repeating: 0x47, count: 16)) else { fatalError("a 16-byte group id") }
        return id
    }()
    static let state: GroupState = {
        guard let state = try? GroupState(name: "fixture", members: keys.prefix(3).enumerated().map { GroupMember(key: $1.publicKey, isAdmin: $0 == 0) })
        else { fatalError("the fixture state") }
        return state
    }()
    static let messageKey = SecretBytes(copying: [UInt8](repeating: 5, count: 44))
}

/// The §12 vectors' file key and object id (Tests/CoordsCoreTests/KnownAnswers/objects-v1.json),
/// so the committed seed (the vectors' 100-byte object) opens and reaches the digest check.
enum AttachmentFixture {
    static let key = SecretBytes(copying: (try? Base64.decode("NlG1ukulsSsv6s0HpYt4DzohQZHcf4qQbEyZy2Cm15U")) ?? [])
    static let object = try? ObjectID(base64URL: "MYtX9y9oVKIhyglHIxbUpQ")
    static let digest = (try? Base64.decode("4hwZb0kxl3vgSSynL1MdbSpHJXyLZE0QIPPMQHVKuwE")) ?? []
}

/// Attachments (PROTOCOL.md §12). First byte even: the rest is an object, fed to an opener in
/// pieces of `first / 2 + 1` bytes, announced with the size its length implies (or one byte
/// less); whatever it is, no trap, and an object that opens seals again to exactly its bytes.
/// First byte odd: the rest is a file message member; parsing never traps, and what parses
/// round-trips through its JSON.
@Sendable func attachment(_ bytes: [UInt8]) {
    guard let mode = bytes.first, let object = AttachmentFixture.object else { return }
    let rest = Array(bytes.dropFirst())
    if mode & 1 == 1 {
        guard let value = try? JSONValue.parse(rest), let file = try? FileAttachment(json: value) else { return }
        check((try? FileAttachment(json: file.json)) == file, "a file member round-trips")
        let local = file.localName
        check(!local.isEmpty && !local.hasPrefix(".") && local.utf8.count <= max(file.name.utf8.count, 11), "a local name is short and visible")
        check(!local.unicodeScalars.contains(where: FileAttachment.disguises), "a local name has nothing that disguises it")
        return
    }
    let chunks = max(1, (rest.count + Objects.chunkByteCount + 15) / (Objects.chunkByteCount + 16))
    let implied = max(0, rest.count - 16 * chunks)
    for size in [implied, max(0, implied - 1)] {
        guard var opener = try? ObjectOpener(key: AttachmentFixture.key, object: object, size: UInt64(size), digest: AttachmentFixture.digest) else {
            check(false, "an opener for a small size")
            return
        }
        var plaintext: [UInt8] = []
        let piece = Int(mode / 2) + 1
        var failed = false
        for start in stride(from: 0, to: rest.count, by: piece) where !failed {
            failed = (try? rest[start..<min(rest.count, start + piece)].withUnsafeBytes { try opener.update($0, appendingTo: &plaintext) }) == nil
        }
        guard !failed, (try? opener.finish()) != nil else { continue }
        check(plaintext.count == size, "an opened object has the announced size")
        do {
            var sealer = try ObjectSealer(key: AttachmentFixture.key, object: object, size: UInt64(size))
            var again = try sealer.update(plaintext)
            _ = try sealer.finish(appendingTo: &again)
            check(again == rest, "an object that opens seals again to its bytes")
        } catch {
            check(false, "an opened object seals again: \(error)")
        }
    }
}

/// The push gateway's routes (docs/PUSH.md): any request is answered, never with 500, and no
/// answer to a wake is 200 (there is no provider to deliver it).
@Sendable func gatewayRouter(_ bytes: [UInt8]) {
    let (head, body) = fuzzedRequest(bytes, authority: "gateway")
    blocking {
        let request = Request(head: head, body: .init(buffer: ByteBuffer(bytes: body)))
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let context = RelayRequestContext(source: .init(channel: NIOAsyncTestingChannel(), logger: logger))
        do {
            let response = try await Fixture.gatewayResponder.respond(to: request, context: context)
            check(response.status.code != 500, "gateway answered 500 to \(head.method) \((head.path ?? "").prefix(80))")
            if head.method == .post, head.path?.hasPrefix("/up/") == true { check(response.status.code != 200, "a wake delivered without a provider") }
        } catch {
            check(false, "gateway router threw instead of answering: \(error)")
        }
    }
}

/// What a provider (or something posing as one) answers: the first two bytes pick the status,
/// the next up to 12 are `Retry-After`, the rest is the body. Classifying never traps; every
/// reason is a short label of letters, digits and `_`; a Retry-After is at most an hour.
@Sendable func providerAnswer(_ bytes: [UInt8]) {
    guard bytes.count >= 2 else { return }
    let status = 100 + Int(UInt16(bytes[0]) << 8 | UInt16(bytes[1])) % 500
    let retryText = String(decoding: bytes.dropFirst(2).prefix(12), as: UTF8.self)
    let retryAfter = ProviderAnswer.parseRetryAfter(retryText)
    if let retryAfter { check(retryAfter <= ProviderAnswer.longestRetryAfter && retryAfter >= .zero, "Retry-After out of bounds") }
    let body = Array(bytes.dropFirst(14))
    let answer = ProviderAnswer(status: status, retryAfter: retryAfter, body: try? JSONValue.parse(body, maximumDepth: 16))
    for outcome in [APNsProvider.classify(answer), FCMProvider.classify(answer)] {
        let reason = outcome.reason
        check(
            !reason.isEmpty && reason.utf8.count <= 40
                && reason.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F },
            "an unsanitised reason \(reason.prefix(60))")
        if status == 200 { check(outcome == .delivered, "200 is delivered") }
    }
    // The service account file is a publisher's, but its parser must not trap on anything.
    _ = try? FCMServiceAccount(json: body)
}
