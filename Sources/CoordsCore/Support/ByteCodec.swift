import CPlatform

/// Reading past the end of a ``ByteReader``'s input.
public struct ByteReaderError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Bytes asked for.
    public var wanted: Int
    /// Bytes that were left.
    public var remaining: Int
    public var description: String { "truncated input: wanted \(wanted) bytes, \(remaining) left" }

    /// The error for `wanted` bytes when `remaining` were left.
    @inlinable
    public init(wanted: Int, remaining: Int) { (self.wanted, self.remaining) = (wanted, remaining) }
}

/// A cursor over untrusted bytes that reads big-endian integers and byte runs, and throws
/// ``ByteReaderError`` instead of trapping when the input is short (whatever a length field says).
///
/// ```swift
/// var reader = ByteReader(bytes)
/// let version = try reader.read(UInt8.self)
/// let stamp = try reader.read(UInt64.self)
/// let name = try reader.read(count: Int(try reader.read(UInt8.self)))
/// ```
///
/// The readers are `@inlinable`: the relay's stores and the managers decode records with them
/// from other modules, where an unspecialised generic `read` cost a witness-table call per byte.
public struct ByteReader {
    @usableFromInline let base: UnsafeRawBufferPointer
    /// Bytes consumed so far. Invariant: `0 <= consumed <= base.count` (it only advances after a
    /// guard that the bytes are there), so `base.count - consumed` and `consumed + n` for a
    /// checked `n <= remaining` can never overflow or index out of bounds, whatever the input says.
    /// Only the reading methods of this type change it (it is internal, not private, so that they
    /// can be `@inlinable`; nothing else in the module writes it).
    @usableFromInline var consumed = 0

    /// Reads `bytes`; use the reader only while `bytes` is valid (inside its `withUnsafeBytes`).
    public init(_ bytes: UnsafeRawBufferPointer) { base = bytes }

    /// Bytes consumed so far.
    @inlinable public var offset: Int { consumed }
    /// Bytes not yet read.
    @inlinable public var remaining: Int { base.count - consumed }
    /// Whether everything was read.
    @inlinable public var isAtEnd: Bool { consumed >= base.count }

    /// Reads a big-endian integer.
    /// - Throws: ``ByteReaderError`` when fewer than `MemoryLayout<T>.size` bytes are left.
    @inlinable
    public mutating func read<T: FixedWidthInteger>(_: T.Type) throws(ByteReaderError) -> T {
        let size = MemoryLayout<T>.size
        guard size <= remaining else { throw ByteReaderError(wanted: size, remaining: remaining) }
        var value: T = 0
        for index in consumed..<consumed + size { value = value << 8 | T(truncatingIfNeeded: base[index]) }
        consumed += size
        return value
    }

    /// Reads `count` bytes (a negative or oversized count throws; it never traps).
    /// - Throws: ``ByteReaderError``.
    @inlinable
    public mutating func read(count: Int) throws(ByteReaderError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw ByteReaderError(wanted: count, remaining: remaining) }
        let bytes = Array(base[consumed..<consumed + count])
        consumed += count
        return bytes
    }

    /// Reads `count` bytes as a view into the input (valid as long as the input is; nothing is
    /// copied, so secrets can go straight into wiped memory).
    /// - Throws: ``ByteReaderError``.
    @inlinable
    public mutating func readBuffer(count: Int) throws(ByteReaderError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw ByteReaderError(wanted: count, remaining: remaining) }
        let view = UnsafeRawBufferPointer(rebasing: base[consumed..<consumed + count])
        consumed += count
        return view
    }

    /// Reads everything that is left.
    public mutating func readRemaining() -> [UInt8] {
        let bytes = Array(base[consumed...])
        consumed = base.count
        return bytes
    }
}

/// Builds a byte string of big-endian integers and byte runs (the writing side of ``ByteReader``).
public struct ByteWriter: Sendable {
    @usableFromInline var written: [UInt8] = []

    /// What was written.
    @inlinable public var bytes: [UInt8] { written }

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 0) { written.reserveCapacity(max(capacity, 0)) }

    /// Appends `value` big-endian.
    @inlinable
    public mutating func write<T: FixedWidthInteger>(_ value: T) { written.appendBigEndian(value) }

    /// Appends raw bytes.
    @inlinable
    public mutating func write(_ run: some Sequence<UInt8>) { written.append(contentsOf: run) }
}

extension ByteReader {
    /// Runs `body` with a reader over `bytes`.
    public static func reading<R>(_ bytes: [UInt8], _ body: (inout ByteReader) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            return try body(&reader)
        }
    }

    /// The big-endian integer at `offset` of `bytes`.
    /// - Throws: ``ByteReaderError`` when it does not fit (a negative offset included).
    public static func bigEndian<T: FixedWidthInteger>(_: T.Type, in bytes: [UInt8], at offset: Int) throws(ByteReaderError) -> T {
        let result: Result<T, ByteReaderError> = bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            return Result { () throws(ByteReaderError) -> T in
                _ = try reader.readBuffer(count: offset)
                return try reader.read(T.self)
            }
        }
        return try result.get()
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` big-endian (the encoding of ``ByteWriter/write(_:)-(T)``).
    @inlinable
    public mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        let size = MemoryLayout<T>.size
        for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    /// Appends `count` zero bytes (nothing for `count` ≤ 0) with one `memset` and one copy:
    /// appending a `repeatElement` goes byte by byte through generic code in an unoptimised
    /// build, which made a debug build seal attachments at 2 MiB/s.
    mutating func appendZeros(_ count: Int) {
        guard count > 0 else { return }
        let zeros = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let base = buffer.baseAddress { _ = memset(base, 0, count) }
            initialized = buffer.baseAddress == nil ? 0 : count
        }
        append(contentsOf: zeros)
    }

    /// Appends the bytes of `bytes` in one copy (appending a slice of a buffer goes byte by byte
    /// through generic code in an unoptimised build).
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
        append(contentsOf: bytes)
    }
}
