import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import CoordsRelay

/// Push for sleeping phones (PROTOCOL.md §8.7): the endpoint rule, signed registration, the
/// store on every backend, and wakes to a real HTTP receiver on loopback.
@Suite struct PushTests {
    static let bob = MailboxTests.bob

    // MARK: The endpoint rule

    @Test func endpointsParseStrictly() throws {
        let ok = try PushEndpoint(parsing: "https://push.example.net/up/AbC?x=1", allowInsecure: false)
        #expect(ok.host == "push.example.net" && ok.port == 443 && ok.secure)
        let v6 = try PushEndpoint(parsing: "https://[2606:4700::1111]:8443/x", allowInsecure: false)
        #expect(v6.host == "2606:4700::1111" && v6.port == 8443)
        #expect(try PushEndpoint(parsing: "http://127.0.0.1:9/x", allowInsecure: true).port == 9)
        let refused = [
            "http://push.example.net/up",  // not https
            "ftp://push.example.net/", "https://", "https:///path", "https://user@push.example.net/",
            "https://push.example.net/#frag", "https://push.example.net:0/", "https://push.example.net:65536/",
            "https://push.example.net:80a/", "https://push example.net/", "https://[::1/", "https://[push]/",
            "https://push.example.net/\u{7F}", "https://ex%41mple.net/", "https://" + String(repeating: "a", count: 1020),
            "https://[::1]x/", ""
        ]
        for text in refused {
            #expect(throws: PushEndpointRefusal.self, "\(text)") { try PushEndpoint(parsing: text, allowInsecure: false) }
        }
    }

    @Test func onlyPublicUnicastAddressesAreAllowed() throws {
        let publicOnes = [
            "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.32.0.1", "192.0.1.1", "223.255.255.255",
            "2606:4700:4700::1111", "2a00:1450:4001::1", "64:ff9b::808:808", "2002:808:808::1"
        ]
        let privateOnes = [
            "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.51.100.7",
            "203.0.113.9", "198.18.0.1", "192.0.0.8", "192.88.99.1", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
            "::ffff:169.254.169.254", "::127.0.0.1", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "ff02::1", "100::1",
            "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:a00:1::1", "2002:7f00:1::1", "2001::1", "2001:db8::1",
            "3fff::1"
        ]
        for text in publicOnes {
            let address = try #require(IPAddress(literal: text))
            #expect(EndpointPolicy.isPublic(address, allowLoopback: false), "\(text) is public")
        }
        for text in privateOnes {
            let address = try #require(IPAddress(literal: text))
            #expect(!EndpointPolicy.isPublic(address, allowLoopback: false), "\(text) is not public")
        }
        // The test flag opens loopback only.
        for text in ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"] {
            #expect(EndpointPolicy.isPublic(try #require(IPAddress(literal: text)), allowLoopback: true), "\(text)")
        }
        for text in ["10.0.0.1", "169.254.169.254", "fe80::1", "64:ff9b::7f00:1"] {
            #expect(!EndpointPolicy.isPublic(try #require(IPAddress(literal: text)), allowLoopback: true), "\(text)")
        }
        // Resolution checks every address a name has: localhost is loopback.
        #expect(throws: PushEndpointRefusal.self) { try EndpointPolicy.check(host: "localhost", allowLoopback: false) }
        #expect(try !EndpointPolicy.check(host: "localhost", allowLoopback: true).isEmpty)
        #expect(throws: PushEndpointRefusal.self) { try EndpointPolicy.check(host: "2130706433", allowLoopback: false) }  // 127.0.0.1 spelt as a number
        #expect(throws: PushEndpointRefusal.self) { try EndpointPolicy.check(host: "name.invalid", allowLoopback: false) }
        #expect(try EndpointPolicy.check(host: "1.1.1.1", allowLoopback: false).map(\.description) == ["1.1.1.1"])
    }

    // MARK: Registration

    static func register(
        _ client: some TestClientProtocol, _ relay: RelayHarness, endpoint: String, ttl: UInt64? = nil, signer: Ed25519SigningKey = bob,
        timestamp: UInt64? = nil, forwardedFor: String? = nil
    ) async throws -> TestResponse {
        var headers = MailboxTests.signedHeaders(signer, "PUT", "/v1/relay/push", timestamp ?? relay.now)
        headers[.contentType] = "application/json"
        if let forwardedFor { headers[.xForwardedFor] = forwardedFor }
        var fields: [(String, JSONValue)] = [("endpoint", .string(endpoint))]
        if let ttl { fields.append(("ttl", .number(String(ttl)))) }
        return try await client.execute(
            uri: "/v1/relay/push", method: .put, headers: headers, body: ByteBuffer(bytes: JSONValue.object(JSONObject(fields)).serialized()))
    }

    static func code(_ response: TestResponse) -> String? {
        (try? JSONValue.parse(Array(response.body.readableBytesView)))?.objectValue?["error"]?.stringValue
    }

    @Test(arguments: StoreKind.allCases) func registrationIsSignedCheckedAndExpires(kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind) { $0.push.maximumRegistrations = 1 }
        try await relay.test(.router) { client in
            let unsigned = try await client.execute(
                uri: "/v1/relay/push", method: .put, headers: RelayHarness.json, body: ByteBuffer(string: #"{"endpoint":"https://1.1.1.1/up"}"#))
            #expect(unsigned.status == .unauthorized)
            // Each request gets its own timestamp: the signature covers method, path and time, and is accepted once.
            for (index, endpoint) in [
                "http://1.1.1.1/up", "https://127.0.0.1/up", "https://10.0.0.1/up", "https://169.254.169.254/latest/meta-data",
                "https://[::ffff:192.168.1.1]/up", "https://[fe80::1]/up", "https://localhost/up", "https://name.invalid/up"
            ].enumerated() {
                let refused = try await Self.register(client, relay, endpoint: endpoint, timestamp: relay.now + 10 + UInt64(index))
                #expect(refused.status == .badRequest && Self.code(refused) == "endpoint_refused", "\(endpoint)")
            }
            let badTTL = try await Self.register(client, relay, endpoint: "https://1.1.1.1/up", ttl: 59, timestamp: relay.now + 50)
            #expect(badTTL.status == .badRequest && Self.code(badTTL) == "invalid_ttl")

            let ok = try await Self.register(client, relay, endpoint: "https://1.1.1.1/up/bob", ttl: 60)
            #expect(ok.status == .ok)
            let answer = try JSONValue.parse(Array(ok.body.readableBytesView)).objectValue
            #expect(answer?["endpoint"]?.stringValue == "https://1.1.1.1/up/bob" && answer?["expiresAt"]?.uint64Value == relay.now + 60)
            let recipient = PeerID(Self.bob.publicKey).hex
            #expect(try await relay.store.pushRegistration(recipient: recipient, now: relay.now)?.endpoint == "https://1.1.1.1/up/bob")
            // The same signature again is a replay.
            let replay = try await Self.register(client, relay, endpoint: "https://1.1.1.1/up/bob", ttl: 60)
            #expect(replay.status == .unauthorized)
            // Bob replaces his own registration; a second mailbox does not fit (capacity 1).
            let replaced = try await Self.register(client, relay, endpoint: "https://1.0.0.1/up/bob2", ttl: 60, timestamp: relay.now + 1)
            #expect(replaced.status == .ok)
            let full = try await Self.register(client, relay, endpoint: "https://1.1.1.1/up/carol", signer: MailboxTests.carol)
            #expect(full.status.code == 507 && Self.code(full) == "push_full")

            // Expiry: after the TTL it is gone for readers and the sweep removes it.
            relay.clock.advance(byMilliseconds: 61_000)
            #expect(try await relay.store.pushRegistration(recipient: recipient, now: relay.now) == nil)
            _ = try await relay.service.sweep()
            #expect(try await relay.store.pushCount() == 0)

            // DELETE: signed, idempotent.
            #expect(try await Self.register(client, relay, endpoint: "https://1.1.1.1/up/bob3").status == .ok)
            for expected in [true, false] {
                let deleted = try await client.execute(
                    uri: "/v1/relay/push", method: .delete,
                    headers: MailboxTests.signedHeaders(Self.bob, "DELETE", "/v1/relay/push", relay.now + (expected ? 2 : 3)))
                #expect(deleted.status == .ok)
                #expect(try JSONValue.parse(Array(deleted.body.readableBytesView)).objectValue?["deleted"] == .bool(expected))
            }
        }
    }

    @Test func removingAnOldEndpointKeepsANewerRegistration() async throws {
        for kind in StoreKind.allCases {
            let store = try await StoreUnderTest.store(kind)
            #expect(try await store.pushRegister(recipient: "r1", PushRegistration(endpoint: "https://a/", expiresAt: 100), capacity: 10))
            #expect(try await store.pushRegister(recipient: "r1", PushRegistration(endpoint: "https://b/", expiresAt: 200), capacity: 10))
            #expect(try await !store.pushRemove(recipient: "r1", endpoint: "https://a/"), "\(kind)")
            #expect(try await store.pushRegistration(recipient: "r1", now: 150)?.endpoint == "https://b/")
            #expect(try await store.pushRegister(recipient: "r2", PushRegistration(endpoint: "https://c/", expiresAt: 120), capacity: 10))
            #expect(try await store.pushSweep(now: 150) == 1)
            #expect(try await store.pushCount() == 1)
            #expect(try await store.pushRemove(recipient: "r1", endpoint: "https://b/"))
            #expect(try await store.pushCount() == 0)
            await store.close()
        }
    }

    /// Every store keeps the registering address (and replaces it with the registration); an
    /// LMDB value of the first layout, written before the address was kept, still reads.
    @Test func everyStoreKeepsTheRegisteringAddress() async throws {
        for kind in StoreKind.allCases {
            let store = try await StoreUnderTest.store(kind)
            #expect(
                try await store.pushRegister(
                    recipient: "r1", PushRegistration(endpoint: "https://a/", expiresAt: 100, registeredBy: "2001:db8:1:2::/64"), capacity: 10))
            #expect(try await store.pushRegistration(recipient: "r1", now: 50)?.registeredBy == "2001:db8:1:2::/64", "\(kind)")
            #expect(
                try await store.pushRegister(recipient: "r1", PushRegistration(endpoint: "https://b/", expiresAt: 100, registeredBy: "192.0.2.1"), capacity: 10)
            )
            #expect(
                try await store.pushRegistration(recipient: "r1", now: 50)
                    == PushRegistration(endpoint: "https://b/", expiresAt: 100, registeredBy: "192.0.2.1"), "\(kind)")
            await store.close()
        }
        let oldLayout: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0, 100] + Array("https://a/".utf8)
        let old = try oldLayout.withUnsafeBytes { try PushRegistration(storeBytes: $0) }
        #expect(old == PushRegistration(endpoint: "https://a/", expiresAt: 100, registeredBy: ""))
        let new = PushRegistration(endpoint: "https://a/", expiresAt: 100, registeredBy: "192.0.2.1")
        #expect(try new.withStoreBytes { try PushRegistration(storeBytes: $0) } == new)
        for hostile: [UInt8] in [[3, 0, 0, 0, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 0, 0, 0, 1, 200, 65], [2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xFF]] {
            #expect(throws: (any Error).self) { try hostile.withUnsafeBytes { try PushRegistration(storeBytes: $0) } }
        }
        #expect(PushRegistration(endpoint: "https://a/", expiresAt: 1, registeredBy: String(repeating: "x", count: 256)).registeredBy.isEmpty)
    }

    @Test func aRelayWithoutPushAnswers404() async throws {
        var configuration = RelayHarness.defaultConfiguration()
        configuration.push.enabled = false
        let relay = RelayHarness(configuration: configuration)
        try await relay.test(.router) { client in
            let response = try await Self.register(client, relay, endpoint: "https://1.1.1.1/up")
            #expect(response.status == .notFound)
        }
    }

    // MARK: Wakes, over real sockets

    static func configuration(_ change: (inout PushLimits) -> Void = { _ in }) -> RelayConfiguration {
        var configuration = RelayHarness.defaultConfiguration()
        configuration.messageRate = 0
        configuration.push.allowLoopback = true
        configuration.push.coalesceMilliseconds = 300
        configuration.push.retryDelaysMilliseconds = [20, 20]
        configuration.push.timeoutMilliseconds = 2_000
        change(&configuration.push)
        return configuration
    }

    /// Serves a ``PushReceiver`` answering `status`, starts a live relay with `configuration`,
    /// registers the receiver's `/up/bob` for Bob and posts one envelope for him, then runs `body`
    /// (receiver, its port, relay, client).
    static func withRegisteredEndpoint(
        status: Int = 201, _ configuration: RelayConfiguration,
        _ body: @Sendable (PushReceiver, Int, RelayHarness, any TestClientProtocol) async throws -> Void
    ) async throws {
        let receiver = PushReceiver(status: status)
        try await receiver.serve { port in
            let relay = RelayHarness(configuration: configuration)
            try await relay.test(.live) { client in
                #expect(try await Self.register(client, relay, endpoint: "http://127.0.0.1:\(port)/up/bob").status == .ok)
                try await Self.post(client, relay)
                try await body(receiver, port, relay, client)
            }
        }
    }

    /// Posts an envelope for Bob.
    static func post(_ client: some TestClientProtocol, _ relay: RelayHarness) async throws {
        let response = try await client.post(try MailboxTests.envelope(now: relay.now))
        #expect(response.status == .accepted)
    }

    /// Waits until `condition` holds (at most `seconds`; generous, because the relay suites share
    /// 2 cores and a passing wait returns as soon as the condition holds).
    static func eventually(seconds: Int = 30, _ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<(seconds * 20) {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test func anEnvelopeWakesTheEndpointWithAConstantBodyAndWakesCoalesce() async throws {
        // A window long enough that the next three posts land in it even on a loaded machine (a
        // 3 s window was too short once, and so was 6 s under a loaded CI: the posts took longer).
        try await Self.withRegisteredEndpoint(Self.configuration { $0.coalesceMilliseconds = 20_000 }) { receiver, _, relay, client in
            #expect(try await Self.eventually { receiver.count == 1 })
            let hit = try #require(receiver.hits.first)
            #expect(hit.body == PushDispatcher.wakeBody && hit.path == "/up/bob")
            #expect(hit.headers["content-type"] == "application/json" && hit.headers["urgency"] == "high" && hit.headers["ttl"] == "86400")
            // Three envelopes in quick succession: folded into one more wake, sent when the
            // window since the first has passed.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { try await Self.post(client, relay) } }
                try await group.waitForAll()
            }
            #expect(try await Self.eventually(seconds: 60) { receiver.count == 2 })
            try await Task.sleep(for: .milliseconds(800))
            #expect(receiver.count == 2)
            let hits = receiver.hits
            // The window runs from the first send's start; its arrival may lag (a fresh connection).
            if hits.count == 2 { #expect(hits[1].arrived - hits[0].arrived >= .milliseconds(2_000)) }
            #expect(receiver.hits.allSatisfy { $0.body == PushDispatcher.wakeBody })
        }
    }

    @Test func aFailingEndpointIsRetriedThenDroppedAndAGoneOneAtOnce() async throws {
        let recipient = PeerID(Self.bob.publicKey).hex
        try await Self.withRegisteredEndpoint(status: 500, Self.configuration { $0.failedWakesBeforeDrop = 2 }) { receiver, port, relay, client in
            #expect(try await Self.eventually { receiver.count == 3 })  // one attempt + two retries
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await relay.store.pushRegistration(recipient: recipient, now: relay.now) != nil)  // one failed wake: kept
            try await Self.post(client, relay)
            #expect(try await Self.eventually { receiver.count == 6 })
            #expect(try await Self.eventually { try await relay.store.pushRegistration(recipient: recipient, now: relay.now) == nil })

            receiver.status.withLock { $0 = 410 }
            #expect(try await Self.register(client, relay, endpoint: "http://127.0.0.1:\(port)/up/bob2", timestamp: relay.now + 1).status == .ok)
            try await Self.post(client, relay)
            #expect(try await Self.eventually { try await relay.store.pushRegistration(recipient: recipient, now: relay.now) == nil })
            #expect(receiver.count == 7)  // 410: no retry
        }
    }

    /// Issue 37, defect 4: registrations on endpoints that never answer filled every wake slot
    /// and legitimate wakes were skipped; now one host holds at most its share of the slots.
    @Test func endpointsThatNeverAnswerCannotTakeEveryWakeSlot() async throws {
        let blackhole = try Blackhole()
        defer { blackhole.close() }
        let configuration = Self.configuration {
            $0.maximumConcurrentWakes = 8
            $0.maximumConcurrentWakesPerHost = 4
            $0.timeoutMilliseconds = 5_000
        }
        let receiver = PushReceiver()
        try await receiver.serve { port in
            let relay = RelayHarness(configuration: configuration)
            try await relay.test(.live) { client in
                for i in 0..<12 {
                    let victim = try Ed25519SigningKey.generate()
                    let endpoint = "http://127.0.0.1:\(blackhole.port)/up/\(i)"
                    #expect(try await Self.register(client, relay, endpoint: endpoint, signer: victim).status == .ok)
                    #expect(try await client.post(try MailboxTests.envelope(to: victim, now: relay.now)).status == .accepted)
                }
                try await Task.sleep(for: .milliseconds(300))
                // Bob's endpoint is on another host: his wake goes out while the others hang.
                #expect(try await Self.register(client, relay, endpoint: "http://localhost:\(port)/up/bob").status == .ok)
                try await Self.post(client, relay)
                #expect(try await Self.eventually(seconds: 4) { receiver.count == 1 })
            }
        }
    }

    /// Issue 37, defect 4, the other half: one client address registering mailboxes on endpoints
    /// that never answer — here with a per-host share too large to help, as with endpoints on as
    /// many hosts as the attacker names — holds at most its address's share of the wake slots.
    @Test func oneAddressCannotTakeEveryWakeSlotWhateverTheHosts() async throws {
        let blackhole = try Blackhole()
        defer { blackhole.close() }
        var configuration = Self.configuration {
            $0.maximumConcurrentWakes = 8
            $0.maximumConcurrentWakesPerHost = 100
            $0.maximumConcurrentWakesPerAddress = 4
            $0.timeoutMilliseconds = 5_000
        }
        configuration.trustForwardedFor = true
        let receiver = PushReceiver()
        try await receiver.serve { [configuration] port in
            let relay = RelayHarness(configuration: configuration)
            try await relay.test(.live) { client in
                for i in 0..<12 {
                    let victim = try Ed25519SigningKey.generate()
                    let endpoint = "http://127.0.0.1:\(blackhole.port)/up/\(i)"
                    #expect(try await Self.register(client, relay, endpoint: endpoint, signer: victim, forwardedFor: "203.0.113.7").status == .ok)
                    #expect(try await client.post(try MailboxTests.envelope(to: victim, now: relay.now)).status == .accepted)
                }
                try await Task.sleep(for: .milliseconds(300))
                #expect(
                    try await Self.register(client, relay, endpoint: "http://localhost:\(port)/up/bob", forwardedFor: "198.51.100.9").status == .ok)
                #expect(
                    try await relay.store.pushRegistration(recipient: PeerID(Self.bob.publicKey).hex, now: relay.now)?.registeredBy
                        == "198.51.100.9")
                try await Self.post(client, relay)
                #expect(try await Self.eventually(seconds: 4) { receiver.count == 1 })
                let metrics = try await client.execute(uri: "/metrics", method: .get)
                #expect(String(buffer: metrics.body).contains("result=\"skipped_address\""))
            }
        }
    }

    /// Regression (issue 40): a store that could not be read was taken for "no registration",
    /// so the wake ended silently as if there were nothing to wake. Now every attempt fails,
    /// the wake is counted as `store_unavailable`, the endpoint is not penalised, and the next
    /// envelope after the outage wakes it.
    @Test func aStoreOutageFailsTheWakeVisiblyInsteadOfEndingIt() async throws {
        let store = PushOutageStore()
        let receiver = PushReceiver()
        try await receiver.serve { port in
            let relay = RelayHarness(configuration: Self.configuration(), store: store)
            try await relay.test(.live) { client in
                #expect(try await Self.register(client, relay, endpoint: "http://127.0.0.1:\(port)/up/bob").status == .ok)
                store.failing.withLock { $0 = true }
                try await Self.post(client, relay)
                #expect(
                    try await Self.eventually {
                        String(buffer: try await client.execute(uri: "/metrics", method: .get).body).contains("result=\"store_unavailable\"")
                    })
                #expect(receiver.count == 0)
                store.failing.withLock { $0 = false }
                try await Task.sleep(for: .milliseconds(400))  // past the coalescing window
                try await Self.post(client, relay)
                #expect(try await Self.eventually { receiver.count == 1 }, "the registration survived the outage")
            }
        }
    }

    @Test func redirectsAreNotFollowed() async throws {
        try await Self.withRegisteredEndpoint(status: 307, Self.configuration { $0.failedWakesBeforeDrop = 1 }) { receiver, _, relay, client in
            #expect(try await Self.eventually { receiver.count == 3 })
            try await Task.sleep(for: .milliseconds(300))
            #expect(receiver.hits.allSatisfy { $0.path == "/up/bob" })  // the Location target was never asked
            #expect(receiver.count == 3)
        }
    }
}

/// A real HTTP server on loopback that records every POST and answers with `status` (a 3xx
/// carries `Location: /elsewhere`).
final class PushReceiver: Sendable {
    struct Hit: Sendable {
        var path: String
        var headers: [String: String]
        var body: String
        var arrived: ContinuousClock.Instant
    }

    private let recorded = Locked<[Hit]>([])
    let status: Locked<Int>

    init(status: Int = 201) { self.status = Locked(status) }

    var hits: [Hit] { recorded.withLock { $0 } }
    var count: Int { recorded.withLock { $0.count } }

    func serve(_ body: @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        router.post("**") { [self] request, _ -> Response in
            var request = request
            let bytes = try await request.collectBody(upTo: 65_536)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let hit = Hit(path: request.uri.path, headers: headers, body: String(buffer: bytes), arrived: .now)
            recorded.withLock { $0.append(hit) }
            let code = status.withLock { $0 }
            var fields = HTTPFields()
            if (300..<400).contains(code) { fields[.location] = "/elsewhere" }
            return Response(status: .init(code: code), headers: fields)
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test.push-receiver")
        logger.logLevel = .critical  // cancelling the server at the end logs errors that mean nothing here
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            let port = await iterator.next() ?? 0
            try await body(port)
            group.cancelAll()
        }
    }
}

/// A TCP port on loopback that accepts connections (in the kernel's backlog) and never answers.
final class Blackhole: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 128) == 0 else { throw RawSocketError("blackhole: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        fd = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}

/// A memory store whose push registrations cannot be read while `failing` is set (a database
/// outage as the push dispatcher sees it); everything else works.
final class PushOutageStore: RelayStore, @unchecked Sendable {
    let inner = MemoryRelayStore()
    let failing = Locked(false)

    struct Outage: Error, CustomStringConvertible {
        var description: String { "the database is down (test)" }
    }

    func put(key: Bytes32, record: RelayRecord) async throws -> PutResult { try await inner.put(key: key, record: record) }
    func get(keys: [Bytes32], updatedSince: UInt64) async throws -> [Bytes32: RelayRecord] {
        try await inner.get(keys: keys, updatedSince: updatedSince)
    }
    func delete(key: Bytes32, timestamp: UInt64, now: UInt64) async throws -> DeleteResult {
        try await inner.delete(key: key, timestamp: timestamp, now: now)
    }
    func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) async throws -> Int {
        try await inner.sweep(updatedBefore: updatedBefore, tombstonesBefore: tombstonesBefore)
    }
    func count() async throws -> Int { try await inner.count() }
    func close() async { await inner.close() }
    func mailboxPost(_ entry: MailboxEntry, limits: MailboxLimits, now: UInt64) async throws -> MailboxPostResult {
        try await inner.mailboxPost(entry, limits: limits, now: now)
    }
    func mailboxList(recipient: String, now: UInt64, limit: Int) async throws -> [MailboxEntry] {
        try await inner.mailboxList(recipient: recipient, now: now, limit: limit)
    }
    func mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64) async throws -> Bool {
        try await inner.mailboxAck(id: id, recipient: recipient, tombstoneUntil: tombstoneUntil)
    }
    func mailboxSweep(now: UInt64) async throws -> Int { try await inner.mailboxSweep(now: now) }
    func mailboxCount() async throws -> Int { try await inner.mailboxCount() }
    func acceptSignature(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) async throws -> SignatureAcceptance {
        try await inner.acceptSignature(r, until: until, now: now, capacity: capacity)
    }
    func seenSignatureCount() async throws -> Int { try await inner.seenSignatureCount() }
    func pushRegister(recipient: String, _ registration: PushRegistration, capacity: Int) async throws -> Bool {
        try await inner.pushRegister(recipient: recipient, registration, capacity: capacity)
    }
    func pushRegistration(recipient: String, now: UInt64) async throws -> PushRegistration? {
        if failing.withLock({ $0 }) { throw Outage() }
        return try await inner.pushRegistration(recipient: recipient, now: now)
    }
    func pushRemove(recipient: String, endpoint: String?) async throws -> Bool { try await inner.pushRemove(recipient: recipient, endpoint: endpoint) }
    func pushSweep(now: UInt64) async throws -> Int { try await inner.pushSweep(now: now) }
    func pushCount() async throws -> Int { try await inner.pushCount() }
    func prekeyPut(owner: Bytes32, signed: SignedPrekey, oneTime: [OneTimePrekey], stockLimit: Int) async throws -> PrekeyPutResult {
        try await inner.prekeyPut(owner: owner, signed: signed, oneTime: oneTime, stockLimit: stockLimit)
    }
    func prekeyBundle(owner: Bytes32, takeOneTime: Bool, now: UInt64) async throws -> (signed: SignedPrekey, oneTime: OneTimePrekey?)? {
        try await inner.prekeyBundle(owner: owner, takeOneTime: takeOneTime, now: now)
    }
    func prekeyStock(owner: Bytes32) async throws -> PrekeyStock { try await inner.prekeyStock(owner: owner) }
    func prekeySweep(now: UInt64) async throws -> Int { try await inner.prekeySweep(now: now) }
    func prekeyTotals() async throws -> (owners: Int, oneTime: Int) { try await inner.prekeyTotals() }
    func objectPut(_ part: ObjectPart, limits: ObjectLimits, now: UInt64) async throws -> ObjectPutResult {
        await inner.objectPut(part, limits: limits, now: now)
    }
    func objectInfo(_ object: ObjectID, now: UInt64) async throws -> StoredObject? { await inner.objectInfo(object, now: now) }
    func objectRead(_ object: ObjectID, offset: UInt64, count: Int) async throws -> [UInt8] {
        await inner.objectRead(object, offset: offset, count: count)
    }
    func objectDelete(_ object: ObjectID, owner: Bytes32, now: UInt64) async throws -> ObjectDeleteResult {
        await inner.objectDelete(object, owner: owner, now: now)
    }
    func objectSweep(now: UInt64) async throws -> Int { await inner.objectSweep(now: now) }
    func objectTotals() async throws -> (objects: Int, bytes: UInt64) { await inner.objectTotals() }
}
