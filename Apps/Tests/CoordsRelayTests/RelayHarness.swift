import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore

@testable import CoordsRelay

/// A relay on a manual clock with an in-memory or LMDB store, plus helpers to build requests.
struct RelayHarness {
    let clock: ManualClock
    let configuration: RelayConfiguration
    let store: any RelayStore
    let service: RelayService

    static let start: UInt64 = 1_800_000_000  // seconds

    init(
        configuration: RelayConfiguration = RelayHarness.defaultConfiguration(), store: (any RelayStore)? = nil,
        clock: ManualClock = ManualClock(milliseconds: RelayHarness.start * 1000)
    ) {
        self.clock = clock
        self.configuration = configuration
        self.store = store ?? MemoryRelayStore()
        var logger = Logger(label: "test.relay")
        logger.logLevel = .warning
        service = RelayService(configuration: configuration, store: self.store, clock: .manual(clock), logger: logger)
    }

    static func defaultConfiguration() -> RelayConfiguration {
        var configuration = RelayConfiguration()
        configuration.port = 0
        configuration.addressRate = 0
        configuration.keyRate = 0
        // The live test client connects when a test starts and may first send a request much
        // later: the relay suites run in parallel on 2 cores, where a test that takes 1 s alone
        // takes 10 s or more. Its unused connection must outlive that. Not much longer, though:
        // a test that ends before the client's connect completed leaves that connection open
        // (the client's close no longer reaches it), and the relay's graceful shutdown waits for
        // it until a deadline closes it. ConnectionLimitTests sets each deadline it tests.
        configuration.connections.headerTimeoutSeconds = 60
        configuration.connections.bodyTimeoutSeconds = 60
        configuration.connections.idleTimeoutSeconds = 60
        return configuration
    }

    /// The application; its test clients record every response for the OpenAPI check.
    var app: RecordedApplication<some ApplicationProtocol> { RecordedApplication(inner: buildApplication(service: service)) }

    /// Runs `body` against the relay (router or live socket), then closes the store whatever
    /// happened (a PostgreSQL store's pool must not outlive its test).
    func test<Value>(_ setup: TestingSetup, _ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await withCleanup {
            try await app.test(setup, body)
        } cleanup: {
            await store.close()
        }
    }
    var now: UInt64 { clock.milliseconds / 1000 }

    static let json: HTTPFields = [.contentType: "application/json"]

    /// A signed upload body for `signer` (a fresh blob unless given).
    func uploadBody(_ signer: Ed25519SigningKey, timestamp: UInt64? = nil, blob: [UInt8]? = nil) throws -> ByteBuffer {
        let location = try Location(latitude: 46.948, longitude: 7.447, timestamp: clock.milliseconds)
        let bytes = try blob ?? LocationBlob.seal(location.wire, for: [signer.publicKey])
        return ByteBuffer(bytes: RelayAPI.uploadBody(blob: bytes, timestamp: timestamp ?? now, signer: signer).serialized())
    }

    static func body(_ value: JSONValue) -> ByteBuffer { ByteBuffer(bytes: value.serialized()) }

    static func fetchBody(_ ids: [String]) -> ByteBuffer { body(.object(["ids": .array(ids.map { .string($0) })])) }

    func deleteBody(_ signer: Ed25519SigningKey, timestamp: UInt64? = nil) throws -> ByteBuffer {
        let request = try RelayAPI.prepareDelete(timestamp: timestamp ?? now, signer: signer, server: "https://relay.test")
        return ByteBuffer(bytes: request.body)
    }
}

extension RelayHarness {
    /// A relay on a fresh store of `kind`, its configuration ``defaultConfiguration()`` changed by
    /// `configure`. Run it through ``test(_:_:)``, which closes the store whatever the test did.
    static func make(_ kind: StoreKind, _ configure: (inout RelayConfiguration) -> Void = { _ in }) async throws -> RelayHarness {
        var configuration = defaultConfiguration()
        configure(&configuration)
        return RelayHarness(configuration: configuration, store: try await StoreUnderTest.store(kind))
    }
}

extension TestClientProtocol {
    /// Sends `body` as JSON to the reference API's one route, `/api/location` (PUT uploads, POST
    /// fetches, DELETE deletes).
    func location(_ method: HTTPRequest.Method, _ body: ByteBuffer) async throws -> TestResponse {
        try await execute(uri: "/api/location", method: method, headers: RelayHarness.json, body: body)
    }
}

extension TestResponse {
    /// The body parsed as JSON.
    var json: JSONValue? { try? JSONValue.parse(Array(body.readableBytesView)) }
    /// The `error` code of a JSON error body.
    var errorCode: String? { json?.objectValue?["error"]?.stringValue }
}
