import Foundation

@testable import CoordsCore

/// An in-memory stand-in for a relay, executing the core's prepared requests with no network.
/// It verifies upload signatures like the reference server and, like a CoordsCore relay, adds
/// the uploader's `signature` and `timestamp` to fetch entries (unless `stampsEntries` is off,
/// which mimics the reference relay). Tests reach into `stored` to tamper or replay.
final class FakeRelay: @unchecked Sendable {
    struct Entry: Equatable {
        var blob: String
        var timestamp: UInt64
        var signature: String
        var updated: UInt64
    }

    private let lock = NSLock()
    private var stored: [String: Entry] = [:]
    private(set) var history: [String: [Entry]] = [:]
    var stampsEntries = true
    var now: UInt64 = 1_800_000_000  // relay clock, seconds

    func entry(_ id: String) -> Entry? {
        lock.lock()
        defer { lock.unlock() }
        return stored[id]
    }
    func replace(_ id: String, with entry: Entry?) {
        lock.lock()
        stored[id] = entry
        lock.unlock()
    }

    /// Executes `request`; returns the status and body a real relay would.
    func handle(_ request: PreparedRequest) -> (status: Int, body: [UInt8]) {
        lock.lock()
        defer { lock.unlock() }
        guard let json = try? JSONValue.parse(request.body).objectValue else { return (400, Array("bad json".utf8)) }
        switch request.method {
        case "PUT":
            guard let pubkey = json["pubkey"]?.stringValue, let key = try? Ed25519PublicKey(base64URL: pubkey),
                let blobText = json["blob"]?.stringValue, let blob = try? Base64.decode(blobText),
                let timestamp = json["timestamp"]?.uint64Value,
                let signatureText = json["signature"]?.stringValue, let signature = try? Base64.decode(signatureText)
            else {
                return (400, Array("bad request".utf8))
            }
            guard key.isValidSignature(signature, for: RelayAPI.uploadSignedMessage(blob: blob, timestamp: timestamp)) else {
                return (401, Array("invalid signature".utf8))
            }
            let entry = Entry(blob: blobText, timestamp: timestamp, signature: signatureText, updated: now)
            stored[pubkey] = entry
            history[pubkey, default: []].append(entry)
            return (204, [])
        case "POST":
            guard let ids = json["ids"]?.arrayValue?.compactMap(\.stringValue), ids.count <= 50 else { return (400, Array("too many ids".utf8)) }
            var response = JSONObject()
            for id in ids {
                guard let entry = stored[id] else {
                    response[id] = .null
                    continue
                }
                var fields = JSONObject([("blob", .string(entry.blob)), ("updated", .integer(entry.updated))])
                if stampsEntries {
                    fields["signature"] = .string(entry.signature)
                    fields["timestamp"] = .integer(entry.timestamp)
                }
                response[id] = .object(fields)
            }
            return (200, JSONValue.object(response).serialized())
        default:
            return (405, [])
        }
    }
}

/// A CoordsApp in a temporary directory for tests (fast Argon2id, manual clock).
final class TestApp: @unchecked Sendable {
    let directory: URL
    let clock: ManualClock
    private(set) var app: CoordsApp
    let passphrase: String

    init(
        name: String = "app", passphrase: String = "correct horse", clock: ManualClock = ManualClock(milliseconds: 1_800_000_000_000),
        capacity: Int = 256, directory: URL? = nil
    ) throws {
        self.directory = try directory ?? Fixtures.makeTemporaryDirectory(name)
        self.clock = clock
        self.passphrase = passphrase
        app = try CoordsApp.open(directory: self.directory.path, options: Self.options(passphrase: passphrase, clock: clock, capacity: capacity))
    }

    static func options(passphrase: String, clock: ManualClock, capacity: Int = 256) -> CoordsApp.Options {
        var options = CoordsApp.Options(keychain: .file(.passphrase(passphrase)))
        options.keychainParameters = .minimum
        options.backupParameters = .minimum
        options.clock = .manual(clock)
        options.updateCapacity = capacity
        options.store.durability = .noSync
        return options
    }

    /// Closes and opens the same directory again.
    func reopen(passphrase: String? = nil) throws {
        app.close()
        app = try CoordsApp.open(directory: directory.path, options: Self.options(passphrase: passphrase ?? self.passphrase, clock: clock))
    }

    deinit {
        app.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Shares `location` through `relay` and marks the upload acknowledged.
    @discardableResult
    func share(_ location: Location, via relay: FakeRelay) async throws -> PreparedUpload {
        let upload = try await app.location.prepareUpload(location)
        let (status, body) = relay.handle(upload.request)
        guard (200..<300).contains(status) else { throw RelayAPI.error(status: status, body: body) }
        try await app.location.markUploadSucceeded(fixTimestamp: upload.fixTimestamp)
        return upload
    }

    /// Fetches every friend through `relay`.
    func fetch(via relay: FakeRelay) async throws -> FetchOutcome {
        var total = FetchOutcome()
        for fetch in try await app.location.prepareFetches() {
            let (status, body) = relay.handle(fetch.request)
            guard status == 200 else { throw RelayAPI.error(status: status, body: body) }
            total.merge(try await app.location.processFetchResponse(body))
        }
        return total
    }
}
