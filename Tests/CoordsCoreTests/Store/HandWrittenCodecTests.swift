import Foundation
import Testing

@testable import CoordsCore

/// The hand-written store codecs (UploadState, FriendRecord, CachedLocation: on the core's JSON,
/// not Codable) read what Codable wrote and write what Codable reads, and refuse a damaged row.
@Suite struct HandWrittenCodecTests {
    static func upload() -> UploadState {
        var state = UploadState(lastUploadedFix: 1_763_805_600_000, lastUploadAt: 1_763_805_601_234, pendingFixes: [1, 2, UInt64.max])
        state.lastSignedTimestamp = 1_763_805_601
        state.lastSealedWire = "AAECAwQFBgcICQoLDA0ODxAREhM"
        state.lastSealedFix = 1_763_805_600_500
        state.lastSealedFor = ["friend-a", "friend-b \"quoted\" \\ ü"]
        return state
    }

    static func friend() -> FriendRecord {
        var record = FriendRecord(
            name: "Zoë \"Z\" 🌍", server: "https://relay.example/coords", shareWith: false, fetchFrom: true, addedAt: 1_763_805_600_000,
            x25519PublicKey: "x25519-b64u", trust: .conflict, shareUntil: 1_763_809_200_000)
        record.conflict = [RotationCandidate(key: "a", server: "https://a"), RotationCandidate(key: "b", server: "https://b")]
        return record
    }

    static func cached() throws -> CachedLocation {
        let fix = try Location(latitude: -33.868_82, longitude: 151.209_296, altitude: -12.5, accuracy: 7.3, timestamp: 1_763_805_600_123)
        return CachedLocation(location: fix, updated: 1_763_805_601, fetchedAt: 1_763_805_602_000, authenticity: .verified)
    }

    /// Ours round-trips, Codable reads ours, ours reads Codable's.
    func agreesWithCodable<T: StoreJSONValue & Equatable>(_ value: T) throws {
        let ours = try value.withStoreBytes { Array($0) }
        #expect(try ours.withUnsafeBytes { try T(storeBytes: $0) } == value)
        #expect(try JSONDecoder().decode(T.self, from: Data(ours)) == value)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let theirs = Array(try encoder.encode(value))
        #expect(try theirs.withUnsafeBytes { try T(storeBytes: $0) } == value)
    }

    @Test func uploadStateAgreesWithCodable() throws {
        try agreesWithCodable(UploadState())
        try agreesWithCodable(Self.upload())
    }

    @Test func friendRecordAgreesWithCodable() throws {
        try agreesWithCodable(FriendRecord(name: "", server: "s", addedAt: 0, x25519PublicKey: "k"))
        try agreesWithCodable(Self.friend())
    }

    @Test func cachedLocationAgreesWithCodable() throws {
        try agreesWithCodable(try Self.cached())
        try agreesWithCodable(
            CachedLocation(
                location: Location(unvalidatedLatitude: 1e-7, longitude: -180, altitude: 32767, accuracy: 0, timestamp: 0), updated: nil,
                fetchedAt: 0, authenticity: .unverified))
    }

    /// Ours round-trips and reads the JSON rows Codable wrote before schema 6.
    func readsLegacyRows(_ value: OutboxItem) throws {
        let ours = try value.withStoreBytes { Array($0) }
        #expect(ours.first == OutboxItem.binaryMarker)
        #expect(try ours.withUnsafeBytes { try OutboxItem(storeBytes: $0) } == value)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let theirs = Array(try encoder.encode(value))
        #expect(try theirs.withUnsafeBytes { try OutboxItem(storeBytes: $0) } == value)
    }

    static let outboxRequest = PreparedRequest(
        url: "https://relay.example/v1/relay/messages", method: "POST",
        headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "X-Quote", value: "a \"b\" \\ ü/")],
        body: Array("{\"id\":\"x\"}".utf8) + [0, 255])

    @Test func outboxItemsAreBinaryAndJSONRowsStillRead() throws {
        try readsLegacyRows(OutboxItem(kind: .groupMessage, request: Self.outboxRequest, nextAttemptAt: 5, createdAt: 4))
        var full = OutboxItem(
            kind: .upload, request: PreparedRequest(url: "https://r/api/location", method: "PUT"), attempts: 3, nextAttemptAt: 9, createdAt: 8,
            lastError: "503 — try later", reference: "1763805600123",
            location: try Location(latitude: -33.868_82, longitude: 151.209_296, altitude: -12.5, accuracy: 7.3, timestamp: 1_763_805_600_123))
        full.needsSignature = true
        full.timeRefusals = 2
        try readsLegacyRows(full)
        full.needsSignature = false
        full.timeRefusals = nil
        try readsLegacyRows(full)
        // A kind this version does not know reads as `request`, as Codable did.
        let foreign = #"{"attempts":0,"createdAt":1,"kind":"teleport","nextAttemptAt":2,"request":{"body":"","headers":[],"method":"GET","url":"https:\/\/r"}}"#
        #expect(try Array(foreign.utf8).withUnsafeBytes { try OutboxItem(storeBytes: $0) }.kind == .request)
    }

    /// The layout docs/STORE.md gives for outbox/1, byte for byte.
    @Test func outboxRowLayoutIsPinned() throws {
        var item = OutboxItem(
            kind: .message, request: PreparedRequest(url: "u", method: "GET", headers: [.init(name: "n", value: "v")], body: [0xAB]),
            attempts: 1, nextAttemptAt: 2, createdAt: 3, reference: "r")
        item.timeRefusals = 7
        let bytes = try item.withStoreBytes { Array($0) }
        #expect(
            Hex.encode(bytes)
                == "b1" + "22" + "00000007" + Hex.encode(Array("message".utf8)) + "00000001" + "0000000000000002" + "0000000000000003"
                + "00000003474554" + "0000000175" + "00000001" + "000000016e" + "0000000176" + "00000001ab" + "0000000172" + "00000007")
        let foreign = [0xB1, 0, 0, 0, 0, 8] + Array("teleport".utf8) + [UInt8](repeating: 0, count: 20) + [0, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0]
        #expect(try foreign.withUnsafeBytes { try OutboxItem(storeBytes: $0) }.kind == .request)
    }

    @Test func damagedBinaryOutboxRowsAreErrors() throws {
        let good = try OutboxItem(kind: .groupMessage, request: Self.outboxRequest, nextAttemptAt: 5, createdAt: 4).withStoreBytes { Array($0) }
        var damaged: [[UInt8]] = [[0xB1], Array(good.dropLast()), good + [0], [0xB1, 0x40] + good.dropFirst(2)]
        // A header count of 2³²−1 in a short row is refused before anything is allocated.
        let headerCountAt = 1 + 1 + 4 + "group-message".utf8.count + 4 + 8 + 8 + 4 + 4 + 4 + Self.outboxRequest.url.utf8.count
        var many = good
        for index in headerCountAt..<headerCountAt + 4 { many[index] = 0xFF }
        damaged.append(many)
        // A method that is not UTF-8.
        var latin = good
        latin[1 + 1 + 4 + "group-message".utf8.count + 4 + 8 + 8 + 4] = 0xFF
        damaged.append(latin)
        // A location that is not finite.
        var fix = try OutboxItem(
            kind: .upload, request: PreparedRequest(url: "u", method: "PUT"), nextAttemptAt: 1, createdAt: 1,
            location: try Location(latitude: 1, longitude: 2, altitude: 3, accuracy: 4, timestamp: 5)
        ).withStoreBytes { Array($0) }
        let latitudeAt = fix.count - 36
        for (offset, byte) in withUnsafeBytes(of: Double.nan.bitPattern.bigEndian, { Array($0) }).enumerated() { fix[latitudeAt + offset] = byte }
        damaged.append(fix)
        for row in damaged {
            #expect(throws: StoreCodecError.self) { try row.withUnsafeBytes { try OutboxItem(storeBytes: $0) } }
        }
    }

    @Test func groupRecordAgreesWithCodable() throws {
        var record = GroupRecord(
            name: "Porto 2026 🚆 \"x\"", members: [GroupMemberRecord(key: "a", admin: true), GroupMemberRecord(key: "b", admin: false)],
            status: .member, heads: ["00ff", "0aff"], epoch: 3, highestEpoch: UInt32.max - 1, sharing: true, joinedAt: 1, changedAt: 2,
            ownChain: UInt32.max)
        try agreesWithCodable(record)
        record.ownChain = nil
        record.status = .removed
        try agreesWithCodable(record)
        record.mutedUntil = UInt64.max
        try agreesWithCodable(record)
        let overflow = #"{"changedAt":0,"epoch":4294967296,"heads":[],"highestEpoch":0,"joinedAt":0,"members":[],"name":"n","sharing":false,"status":"member"}"#
        #expect(throws: StoreCodecError.self) { try Array(overflow.utf8).withUnsafeBytes { try GroupRecord(storeBytes: $0) } }
    }

    /// MessageRecord left Codable when it gained the file attachment (FileAttachment holds its key
    /// in SecretBytes): ours round-trips, and reads the rows Codable wrote before (sorted keys,
    /// absent optionals left out).
    @Test func messageRecordRoundTripsAndReadsEarlierRows() throws {
        func roundTrips(_ value: MessageRecord) throws {
            let ours = try value.withStoreBytes { Array($0) }
            #expect(try ours.withUnsafeBytes { try MessageRecord(storeBytes: $0) } == value)
        }
        let message = MessageRecord(
            id: "6f1e0b52-3c1a-4d55-9a43-0e8d0c1d2f3a", peer: "peer", outgoing: true, kind: "text", text: "ü \"quoted\" 🌍\n", sentAt: 1, storedAt: 2,
            status: .delivered, disappearsAt: nil)
        try roundTrips(message)
        var grouped = message
        grouped.group = "R0dHR0dHR0dHR0dHR0dHRw"
        grouped.disappearsAt = 99
        for notify in [true, false] {
            grouped.notify = notify
            try roundTrips(grouped)
        }
        var file = message
        file.kind = "file"
        file.file = try FileAttachment(
            object: try ObjectID(bytes: Array(repeating: 7, count: 16)), size: 65_537, type: "image/jpeg", name: "Zoë.jpg",
            digest: Array(repeating: 1, count: 32), key: SecretBytes(copying: Array(repeating: 2, count: 32)), expiresAt: 1_800_000_000)
        try roundTrips(file)
        let earlier =
            #"{"disappearsAt":99,"group":"R0dHR0dHR0dHR0dHR0dHRw","id":"6f1e0b52-3c1a-4d55-9a43-0e8d0c1d2f3a","kind":"text","notify":false,"outgoing":true,"peer":"peer","sentAt":1,"status":"delivered","storedAt":2,"text":"ü \"quoted\" 🌍\n"}"#
        #expect(try Array(earlier.utf8).withUnsafeBytes { try MessageRecord(storeBytes: $0) } == grouped)
        let damaged = #"{"file":{"object":"short"},"id":"i","kind":"file","outgoing":false,"peer":"p","sentAt":1,"status":"received","storedAt":2,"text":""}"#
        #expect(throws: StoreCodecError.self) { try Array(damaged.utf8).withUnsafeBytes { try MessageRecord(storeBytes: $0) } }
    }

    @Test(arguments: [
        "{}", #"{"attempts":-1,"createdAt":1,"kind":"message","nextAttemptAt":2,"request":{"body":"","headers":[],"method":"GET","url":"u"}}"#,
        #"{"attempts":0,"createdAt":1,"kind":"message","nextAttemptAt":2,"request":{"body":"!","headers":[],"method":"GET","url":"u"}}"#,
        #"{"attempts":0,"createdAt":1,"kind":"message","nextAttemptAt":2,"request":{"body":"","headers":[{"name":1}],"method":"GET","url":"u"}}"#,
        #"{"attempts":4294967296,"createdAt":1,"kind":"message","nextAttemptAt":2,"request":{"body":"","headers":[],"method":"GET","url":"u"}}"#
    ])
    func damagedOutboxItemsAreErrors(_ text: String) {
        #expect(throws: StoreCodecError.self) { try Array(text.utf8).withUnsafeBytes { try OutboxItem(storeBytes: $0) } }
    }

    @Test func absentAndNullOptionalsAreNil() throws {
        let state = try Array(#"{"pendingFixes":[],"lastUploadedFix":null,"unknown":{"x":1}}"#.utf8).withUnsafeBytes { try UploadState(storeBytes: $0) }
        #expect(state == UploadState())
    }

    @Test func unencodableValuesAreErrors() throws {
        var record = try Self.cached()
        record.location.altitude = .nan
        #expect(throws: StoreError.self) { try record.withStoreBytes { _ in } }
    }

    @Test(arguments: [
        "", "null", "[]", "{}", #"{"pendingFixes":"1"}"#, #"{"pendingFixes":[-1]}"#, #"{"pendingFixes":[1.5]}"#,
        #"{"pendingFixes":[],"lastUploadedFix":"7"}"#, #"{"pendingFixes":[],"lastSignedTimestamp":-3}"#,
        #"{"pendingFixes":[],"lastSealedWire":5}"#, #"{"pendingFixes":[],"lastSealedFor":"a"}"#,
        #"{"pendingFixes":[],"lastSealedFor":[1]}"#, #"{"pendingFixes":[18446744073709551616]}"#, #"{"pendingFixes":["#
    ])
    func damagedUploadStatesAreErrors(_ text: String) {
        #expect(throws: StoreCodecError.self) { try Array(text.utf8).withUnsafeBytes { try UploadState(storeBytes: $0) } }
    }

    static let friendBase = #""addedAt":1,"fetchFrom":true,"name":"n","server":"s","shareWith":true,"x25519PublicKey":"k""#

    @Test(arguments: [
        "{\(friendBase)}", "{\(friendBase),\"trust\":\"trusted\"}", "{\(friendBase),\"trust\":1}",
        #"{"addedAt":1,"fetchFrom":true,"name":"n","server":"s","shareWith":"yes","x25519PublicKey":"k","trust":"verified"}"#,
        "{\(friendBase),\"trust\":\"verified\",\"conflict\":[{\"key\":\"a\"}]}", "{\(friendBase),\"trust\":\"verified\",\"conflict\":[1]}",
        "{\(friendBase),\"trust\":\"verified\",\"shareUntil\":-1}"
    ])
    func damagedFriendRecordsAreErrors(_ text: String) {
        #expect(throws: StoreCodecError.self) { try Array(text.utf8).withUnsafeBytes { try FriendRecord(storeBytes: $0) } }
    }

    static let fixBase = #""altitude":0,"latitude":1,"longitude":2,"timestamp":3"#

    @Test(arguments: [
        #"{"authenticity":"verified","fetchedAt":1}"#, "{\"authenticity\":\"verified\",\"fetchedAt\":1,\"location\":{\(fixBase)}}",
        "{\"authenticity\":\"verified\",\"fetchedAt\":1,\"location\":{\(fixBase),\"accuracy\":1e300}}",
        "{\"authenticity\":\"forged\",\"fetchedAt\":1,\"location\":{\(fixBase),\"accuracy\":1}}",
        "{\"authenticity\":\"verified\",\"fetchedAt\":1,\"location\":{\(fixBase),\"accuracy\":\"1\"}}",
        "{\"authenticity\":\"verified\",\"fetchedAt\":1,\"location\":[1]}"
    ])
    func damagedCachedLocationsAreErrors(_ text: String) {
        #expect(throws: StoreCodecError.self) { try Array(text.utf8).withUnsafeBytes { try CachedLocation(storeBytes: $0) } }
    }
}
