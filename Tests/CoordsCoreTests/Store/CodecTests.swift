import Testing

@testable import CoordsCore

@Suite struct CodecTests {
    func roundTrip<T: StoreCodable & Equatable>(_ value: T) throws -> T {
        try value.withStoreBytes { try T(storeBytes: $0) }
    }

    func bytes<T: StoreCodable>(_ value: T) throws -> [UInt8] {
        try value.withStoreBytes { Array($0) }
    }

    @Test func integersRoundTripAtTheirExtremes() throws {
        for v: UInt8 in [0, 1, 127, 255] { #expect(try roundTrip(v) == v) }
        for v: UInt16 in [0, 1, .max] { #expect(try roundTrip(v) == v) }
        for v: UInt32 in [0, 1, .max] { #expect(try roundTrip(v) == v) }
        for v: UInt64 in [0, 1, .max, 1 << 63] { #expect(try roundTrip(v) == v) }
        for v: Int8 in [.min, -1, 0, 1, .max] { #expect(try roundTrip(v) == v) }
        for v: Int16 in [.min, -1, 0, 1, .max] { #expect(try roundTrip(v) == v) }
        for v: Int32 in [.min, -1, 0, 1, .max] { #expect(try roundTrip(v) == v) }
        for v: Int64 in [.min, -1, 0, 1, .max] { #expect(try roundTrip(v) == v) }
        #expect(try bytes(UInt32(0x0102_0304)) == [1, 2, 3, 4])
        #expect(try bytes(Int16(-1)) == [0x7f, 0xff])
        #expect(try bytes(Int16(0)) == [0x80, 0x00])
    }

    @Test func encodedIntegerOrderIsNumericOrder() throws {
        let values: [Int64] = [.min, -1_000_000, -256, -255, -1, 0, 1, 255, 256, 1_000_000, .max]
        let encoded = try values.map { try bytes($0) }
        #expect(encoded == encoded.sorted { $0.lexicographicallyPrecedes($1) })
        let unsigned: [UInt64] = [0, 1, 255, 256, 65_535, 65_536, .max]
        let encodedUnsigned = try unsigned.map { try bytes($0) }
        #expect(encodedUnsigned == encodedUnsigned.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func otherCodecsRoundTrip() throws {
        #expect(try roundTrip(true) == true)
        #expect(try roundTrip(false) == false)
        #expect(try roundTrip("") == "")
        #expect(try roundTrip("Zoë 🚲") == "Zoë 🚲")
        #expect(try roundTrip([UInt8]()) == [])
        #expect(try roundTrip([UInt8](0...255)) == [UInt8](0...255))
        let b32 = try Bytes32([UInt8](repeating: 9, count: 32))
        #expect(try roundTrip(b32) == b32)
        let key = try Ed25519SigningKey.generate().publicKey
        #expect(try roundTrip(key) == key)
        let friend = FriendRecord(name: "Bob", server: "https://coord.is", addedAt: 5, x25519PublicKey: "abc", trust: .verified)
        #expect(try roundTrip(friend) == friend)
        let item = OutboxItem(
            kind: .upload,
            request: PreparedRequest(
                url: "https://x/api/location", method: "PUT",
                headers: [.init(name: "A", value: "b")], body: [0, 1, 255]),
            nextAttemptAt: 1, createdAt: 2, lastError: "offline")
        #expect(try roundTrip(item) == item)
        let cached = CachedLocation(
            location: try Location(latitude: 1.5, longitude: -2.25, accuracy: 3, timestamp: 4),
            updated: 5, fetchedAt: 6, authenticity: .verified)
        #expect(try roundTrip(cached) == cached)
    }

    @Test func corruptBytesAreDecodingErrorsNotTraps() {
        let junk: [[UInt8]] = [[], [1], [0xff, 0xfe], [UInt8](repeating: 0x41, count: 33), Array("{\"name\":".utf8)]
        for bytes in junk {
            bytes.withUnsafeBytes { raw in
                #expect((try? UInt64(storeBytes: raw)) == nil || raw.count == 8)
                #expect((try? Bool(storeBytes: raw)) == nil || (raw.count == 1 && raw[0] <= 1))
                #expect((try? Bytes32(storeBytes: raw)) == nil || raw.count == 32)
                #expect((try? FriendRecord(storeBytes: raw)) == nil)
                #expect((try? Ed25519PublicKey(storeBytes: raw)) == nil)
            }
        }
        [0xff, 0xfe].withUnsafeBytes { raw in #expect((try? String(storeBytes: raw)) == nil) }
        [2].withUnsafeBytes { raw in #expect((try? Bool(storeBytes: raw)) == nil) }
    }
}
