import Testing

@testable import CoordsCore

/// The one big-endian codec every format uses (relay store, keychain, backups, messages, relay API).
@Suite struct ByteCodecTests {
    @Test func writerAndReaderRoundTripEveryWidth() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0xAB))
        writer.write(UInt16(0x0102))
        writer.write(UInt32(0x0304_0506))
        writer.write(UInt64.max - 1)
        writer.write(Int64(-2))
        writer.write([9, 8, 7] as [UInt8])
        #expect(writer.bytes.prefix(7) == [0xAB, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        let values = try ByteReader.reading(writer.bytes) { reader in
            (
                try reader.read(UInt8.self), try reader.read(UInt16.self), try reader.read(UInt32.self), try reader.read(UInt64.self),
                try reader.read(Int64.self), try reader.read(count: 3), reader.isAtEnd
            )
        }
        #expect(values.0 == 0xAB && values.1 == 0x0102 && values.2 == 0x0304_0506 && values.3 == .max - 1 && values.4 == -2)
        #expect(values.5 == [9, 8, 7] && values.6)
        var appended: [UInt8] = [1]
        appended.appendBigEndian(UInt32(0xDEAD_BEEF))
        #expect(appended == [1, 0xDE, 0xAD, 0xBE, 0xEF])
    }

    @Test func hostileOffsetsAndCountsThrowInsteadOfTrapping() {
        let bytes: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 42, 1]
        #expect((try? ByteReader.bigEndian(UInt64.self, in: bytes, at: 0)) == 42)
        for offset in [-1, 2, 9, 10, Int.max, Int.min] {
            #expect(throws: ByteReaderError.self, "offset \(offset)") { try ByteReader.bigEndian(UInt64.self, in: bytes, at: offset) }
        }
        ByteReader.reading(bytes) { reader in
            #expect(throws: ByteReaderError.self) { try reader.readBuffer(count: -1) }
            #expect(throws: ByteReaderError.self) { try reader.readBuffer(count: Int.max) }
            #expect((try? reader.readBuffer(count: 9))?.count == 9)
            #expect(throws: ByteReaderError.self) { try reader.read(UInt8.self) }
        }
    }
}
