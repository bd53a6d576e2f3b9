#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A type that can be stored in a table, as key or value.
///
/// Each codec has a **hand-written, stable type name** (`"u64"`, `"string"`,
/// `"json:FriendRecord/1"`). The names of a table's key and value types are recorded when the
/// table is created; opening it later with other types is a ``StoreError/tableTypeMismatch(table:stored:requested:)``,
/// never a silent misreading. Change the name whenever the encoding changes, and add a migration.
public protocol StoreCodable: Sendable {
    /// The stable name of this encoding.
    static var storeTypeName: String { get }
    /// Calls `body` with the encoded bytes (valid only during the call).
    /// - Throws: ``StoreError/encodingFailed(type:reason:)`` or whatever `body` throws.
    func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
    /// Decodes stored bytes.
    /// - Throws: ``StoreCodecError`` when the bytes are not a valid encoding.
    init(storeBytes: UnsafeRawBufferPointer) throws
}

/// A key type. Its encoding's **byte order must be the order you want keys in**: tables
/// iterate in lexicographic byte order (LMDB's default comparison).
public protocol StoreKey: StoreCodable {}

/// A value type.
public protocol StoreValue: StoreCodable {}

/// Why stored bytes could not be decoded (wrapped into ``StoreError/decodingFailed(table:type:reason:)``).
public struct StoreCodecError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// An error that says what is wrong with the bytes.
    public init(_ description: String) { self.description = description }
}

// MARK: Integers: big-endian; signed ones with the sign bit flipped, so byte order is numeric order.

/// Shared implementation of the integer codecs.
public protocol StoreInteger: FixedWidthInteger, StoreKey, StoreValue {}

extension StoreInteger {
    @inline(__always)
    var orderedBitPattern: Self {
        Self.isSigned ? self ^ (Self(1) << (Self.bitWidth - 1)) : self
    }

    /// Big-endian bytes of the order-preserving bit pattern.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes(of: orderedBitPattern.bigEndian) { try body($0) }
    }

    /// Decodes exactly `bitWidth / 8` big-endian bytes.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == MemoryLayout<Self>.size else {
            throw StoreCodecError("\(Self.storeTypeName) needs \(MemoryLayout<Self>.size) bytes, found \(storeBytes.count)")
        }
        var value = Self.zero
        for byte in storeBytes { value = value << 8 | Self(truncatingIfNeeded: byte) }
        self = Self.isSigned ? value ^ (Self(1) << (Self.bitWidth - 1)) : value
    }
}

extension UInt8: StoreInteger { public static var storeTypeName: String { "u8" } }
extension UInt16: StoreInteger { public static var storeTypeName: String { "u16" } }
extension UInt32: StoreInteger { public static var storeTypeName: String { "u32" } }
extension UInt64: StoreInteger { public static var storeTypeName: String { "u64" } }
extension Int8: StoreInteger { public static var storeTypeName: String { "i8" } }
extension Int16: StoreInteger { public static var storeTypeName: String { "i16" } }
extension Int32: StoreInteger { public static var storeTypeName: String { "i32" } }
extension Int64: StoreInteger { public static var storeTypeName: String { "i64" } }

// MARK: Bool, String, bytes

extension Bool: StoreKey, StoreValue {
    public static var storeTypeName: String { "bool" }
    /// One byte: 0 or 1.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes(of: self ? UInt8(1) : UInt8(0)) { try body($0) }
    }
    /// Accepts exactly one byte, 0 or 1.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 1, storeBytes[0] <= 1 else { throw StoreCodecError("bool must be one byte, 0 or 1") }
        self = storeBytes[0] == 1
    }
}

extension String: StoreKey, StoreValue {
    public static var storeTypeName: String { "string" }
    /// The UTF-8 bytes.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var copy = self
        return try copy.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
    /// Accepts valid UTF-8 only.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard let s = String(validating: storeBytes, as: UTF8.self) else { throw StoreCodecError("string is not valid UTF-8") }
        self = s
    }
}

extension Array: StoreCodable, StoreKey, StoreValue where Element == UInt8 {
    public static var storeTypeName: String { "bytes" }
    /// The bytes themselves.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes { try body($0) }
    }
    /// Any bytes.
    public init(storeBytes: UnsafeRawBufferPointer) throws { self = Array(storeBytes) }
}

/// Exactly 32 bytes (hashes, keys). Type name `"bytes32"`.
public struct Bytes32: StoreKey, StoreValue, Hashable, Comparable {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// Wraps 32 bytes.
    /// - Throws: ``StoreCodecError`` for another length.
    public init(_ bytes: [UInt8]) throws {
        guard bytes.count == 32 else { throw StoreCodecError("bytes32 needs 32 bytes, found \(bytes.count)") }
        self.bytes = bytes
    }

    public static var storeTypeName: String { "bytes32" }
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try bytes.withUnsafeBytes { try body($0) }
    }
    public init(storeBytes: UnsafeRawBufferPointer) throws { try self.init(Array(storeBytes)) }
    public static func < (a: Bytes32, b: Bytes32) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
    /// Hashes the 32 bytes in one call (the synthesised hash fed the hasher a byte at a time, a
    /// visible share of a relay fetch, which hashes every key several times).
    public func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}

extension Ed25519PublicKey: StoreKey, StoreValue {
    /// 32 raw key bytes; decoding re-validates the point.
    public static var storeTypeName: String { "ed25519-public-key" }
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try rawRepresentation.withUnsafeBytes { try body($0) }
    }
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        do { try self.init(rawRepresentation: Array(storeBytes)) } catch { throw StoreCodecError("\(error)") }
    }
}

// MARK: Codable values as JSON

/// Codable values stored as JSON (UTF-8, sorted keys).
///
/// JSON keeps stored records readable with `mdb_dump` and tolerant of added optional fields.
/// Adopt it and give a versioned type name:
/// ```swift
/// struct FriendRecord: StoreJSONValue { static let storeTypeName = "json:FriendRecord/1"; … }
/// ```
public protocol StoreJSONValue: Codable, StoreValue {}

extension StoreJSONValue {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch {
            throw StoreError.encodingFailed(type: Self.storeTypeName, reason: "\(error)")
        }
        return try data.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(storeBytes))
        } catch {
            throw StoreCodecError("invalid JSON for \(Self.storeTypeName): \(error)")
        }
    }
}

/// A stored JSON record read field by field, for the records whose codec is written by hand:
/// the rows every upload or fetch reads, where Foundation's `Codable` cost several times the
/// parse (``UploadState``, ``FriendRecord``, ``CachedLocation``). They read and write the JSON
/// that `Codable` does (keys sorted, absent optionals left out), so rows written either way read
/// the same. Absent and `null` fields read as nil, like `decodeIfPresent`; a field of the wrong
/// type is a ``StoreCodecError``, never a default.
struct StoredJSONReader {
    let object: JSONObject
    let typeName: String

    init(_ bytes: UnsafeRawBufferPointer, typeName: String) throws {
        guard let object = (try? JSONValue.parse(bytes))?.objectValue else {
            throw StoreCodecError("invalid JSON for \(typeName): not a JSON object")
        }
        self.init(object, typeName: typeName)
    }

    init(_ object: JSONObject, typeName: String) {
        self.object = object
        self.typeName = typeName
    }

    func failure(_ reason: String) -> StoreCodecError { StoreCodecError("invalid JSON for \(typeName): \(reason)") }

    /// The field converted by `convert`, nil when absent or null; an error when `convert` refuses it.
    func optional<T>(_ name: String, _ what: String, _ convert: (JSONValue) throws -> T?) throws -> T? {
        guard let value = object[name], value != .null else { return nil }
        guard let converted = try convert(value) else { throw failure("\(name) is not \(what)") }
        return converted
    }

    /// The field converted by `convert`; an error when it is absent, null or refused.
    func required<T>(_ name: String, _ what: String, _ convert: (JSONValue) throws -> T?) throws -> T {
        guard let value = try optional(name, what, convert) else { throw failure("\(name) is missing") }
        return value
    }

    /// An array whose every element `convert` accepts.
    func array<T>(_ value: JSONValue, _ convert: (JSONValue) throws -> T?) throws -> [T]? {
        guard let items = value.arrayValue else { return nil }
        var out: [T] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let converted = try convert(item) else { return nil }
            out.append(converted)
        }
        return out
    }

    /// A nested object, read with the same rules.
    func nested(_ value: JSONValue) -> StoredJSONReader? { value.objectValue.map { StoredJSONReader($0, typeName: typeName) } }
}

extension JSONValue {
    /// A finite floating-point number as JSON (Swift's shortest round-trip form); NaN and the
    /// infinities have no JSON form and are an encoding error.
    static func finite(_ value: Double, field: String, type: String) throws -> JSONValue {
        guard value.isFinite else { throw StoreError.encodingFailed(type: type, reason: "\(field) is \(value), which JSON cannot hold") }
        return .number(String(value))
    }

    /// A JSON number as a `Double` or `Float` (what `Codable` accepts: any JSON number).
    var finiteDouble: Double? { if case .number(let text) = self { Double(text).flatMap { $0.isFinite ? $0 : nil } } else { nil } }
}

/// Lexicographic byte comparison (LMDB's default key order).
@inline(__always)
func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    for i in 0..<n where a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}
