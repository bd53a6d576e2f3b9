/// A JSON value as parsed from untrusted bytes or built for a request body.
///
/// CoordsCore parses relay responses, links and host records with its own strict RFC 8259
/// parser instead of `JSONDecoder` because it needs three things Foundation does not give:
/// object members **in document order** (fetch results come back in the relay's order), a hard
/// **depth limit** (deep nesting cannot exhaust the stack and crash the host), and **exact
/// integers** (numbers keep their literal text, so a `u64` timestamp never passes through a
/// `Double`). Duplicate keys are refused rather than resolved silently.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as its validated literal text (e.g. `"1800000000"`, `"-1.5e3"`).
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object, its members in document order.
    case object(JSONObject)

    /// A number from an unsigned integer.
    public static func integer(_ value: UInt64) -> JSONValue { .number(String(value)) }
    /// A number from a signed integer.
    public static func integer(_ value: Int64) -> JSONValue { .number(String(value)) }
    /// A number from a finite double (shortest round-trip form); NaN and infinities become `null`.
    public static func double(_ value: Double) -> JSONValue {
        guard value.isFinite else { return .null }
        if value == value.rounded(), abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(String(value))
    }
    /// An object from key/value pairs, in order.
    public static func object(_ members: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(JSONObject(members.map { ($0.key, $0.value) }))
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The object, if this is an object.
    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// The Boolean, if this is `true` or `false`.
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// Whether this is `null`.
    public var isNull: Bool { self == .null }
    /// The number as an exact unsigned integer: no sign, fraction or exponent, and within `UInt64`.
    public var uint64Value: UInt64? { if case .number(let n) = self { UInt64(n) } else { nil } }
    /// The number as an exact signed integer.
    public var int64Value: Int64? { if case .number(let n) = self { Int64(n) } else { nil } }
    /// The number as a double (any JSON number).
    public var doubleValue: Double? { if case .number(let n) = self { Double(n) } else { nil } }

    /// Parses `bytes` as one JSON document (surrounding whitespace allowed).
    /// - Parameters:
    ///   - bytes: UTF-8 JSON text.
    ///   - maximumDepth: the deepest nesting of arrays/objects accepted (default 64).
    /// - Throws: ``WireError/invalidJSON(_:)`` naming the byte offset and the problem.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws -> JSONValue {
        try bytes.withUnsafeBytes { try parse($0, maximumDepth: maximumDepth) }
    }

    /// Parses UTF-8 text; see ``parse(_:maximumDepth:)-([UInt8],_)``.
    public static func parse(_ text: String, maximumDepth: Int = 64) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { try parse(UnsafeRawBufferPointer($0), maximumDepth: maximumDepth) }
    }

    /// Parses bytes in place; see ``parse(_:maximumDepth:)-([UInt8],_)``.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int = 64) throws -> JSONValue {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        return try parser.parseDocument()
    }

    /// Compact UTF-8 serialisation (no insignificant whitespace, members in order).
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    /// Compact serialisation as a `String`.
    public var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Runs of bytes that need no escape (all of a base64 blob) are appended whole.
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { bytes in
            var run = 0
            for index in bytes.indices where needsEscape(bytes[index]) {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
                appendEscaped(bytes[index], to: &out)
                run = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        }
        if done == nil {
            for byte in s.utf8 {
                if needsEscape(byte) { appendEscaped(byte, to: &out) } else { out.append(byte) }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always) static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The escape of a quote, a backslash or a control character.
    static func appendEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0a: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0d: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        default:
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), Hex.digit(byte >> 4), Hex.digit(byte)])
        }
    }
}

/// A JSON object: members in document order, keys unique.
public struct JSONObject: Sendable, Equatable {
    /// One `"key": value` member.
    public struct Member: Sendable, Equatable {
        /// The member's name.
        public var key: String
        /// Its value.
        public var value: JSONValue
    }

    /// The members, in order.
    public private(set) var members: [Member]

    /// Creates an object from pairs (a later duplicate replaces the earlier one's value, which
    /// keeps its place). Linear in the number of pairs: beyond a handful, duplicates are found
    /// through a dictionary, not by searching the members (a relay answer has 50).
    public init(_ pairs: [(String, JSONValue)] = []) {
        members = []
        members.reserveCapacity(pairs.count)
        guard pairs.count > 8 else {
            for (k, v) in pairs { self[k] = v }
            return
        }
        var positions: [String: Int] = [:]
        positions.reserveCapacity(pairs.count)
        for (k, v) in pairs {
            if let i = positions[k] {
                members[i].value = v
            } else {
                positions[k] = members.count
                members.append(Member(key: k, value: v))
            }
        }
    }

    init(uniqueMembers: [Member]) { members = uniqueMembers }

    /// The value for `key`, or `nil` when absent. Setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }
    /// The number of members.
    public var count: Int { members.count }
}

/// The recursive-descent parser behind ``JSONValue/parse(_:maximumDepth:)-([UInt8],_)``.
/// Every read is bounds-checked; errors carry the byte offset.
struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    var index = 0
    var depth = 0

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = max(1, maximumDepth)
    }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
        return value
    }

    private func fail(_ why: String) -> WireError {
        .invalidJSON("\(why) at byte \(index)")
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let c = current, c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09 { index += 1 }
    }

    private mutating func expect(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let ok = literal.withUTF8Buffer { lit in
            (0..<count).allSatisfy { bytes[index + $0] == lit[$0] }
        }
        guard ok else { throw fail("invalid literal") }
        index += count
    }

    private mutating func parseValue() throws -> JSONValue {
        guard let c = current else { throw fail("unexpected end of input") }
        switch c {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character 0x\(String(c, radix: 16))")
        }
    }

    /// Enters the container whose opening bracket is at `index`: counts the nesting, consumes the
    /// bracket, and returns true when the container is empty (its `close` consumed as well).
    @inline(__always)
    private mutating func open(_ close: UInt8) throws -> Bool {
        depth += 1
        guard depth <= maximumDepth else { throw fail("nesting deeper than \(maximumDepth) levels") }
        index += 1
        skipWhitespace()
        guard current == close else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After an element: consumes a comma (false: another element follows) or the container's
    /// `close` (true: the container ended).
    @inline(__always)
    private mutating func next(_ close: UInt8) throws -> Bool {
        skipWhitespace()
        if current == UInt8(ascii: ",") {
            index += 1
            return false
        }
        guard current == close else { throw fail("expected ',' or '\(Character(Unicode.Scalar(close)))'") }
        index += 1
        depth -= 1
        return true
    }

    private mutating func parseObject() throws -> JSONValue {
        var members: [JSONObject.Member] = []
        var seen = Set<String>()
        var ended = try open(UInt8(ascii: "}"))
        while !ended {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            guard seen.insert(key).inserted else { throw fail("duplicate key \"\(key.prefix(64))\"") }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            members.append(.init(key: key, value: try parseValue()))
            ended = try next(UInt8(ascii: "}"))
        }
        return .object(JSONObject(uniqueMembers: members))
    }

    private mutating func parseArray() throws -> JSONValue {
        var items: [JSONValue] = []
        var ended = try open(UInt8(ascii: "]"))
        while !ended {
            skipWhitespace()
            items.append(try parseValue())
            ended = try next(UInt8(ascii: "]"))
        }
        return .array(items)
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw fail("expected a digit") }
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            while let c = current, isDigit(c) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let c = current, isDigit(c) else { throw fail("expected a digit after '.'") }
            while let c = current, isDigit(c) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let c = current, isDigit(c) else { throw fail("expected a digit in the exponent") }
            while let c = current, isDigit(c) { index += 1 }
        }
        let literal = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        return .number(literal)
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private mutating func parseHex4() throws -> UInt16 {
        guard index + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            guard let nibble = Hex.value(of: c) else { throw fail("invalid hex digit in \\u escape") }
            value = value << 4 | UInt16(nibble)
            index += 1
        }
        return value
    }

    private mutating func parseString() throws -> String {
        index += 1  // opening quote
        var out: [UInt8] = []
        var runStart = index
        while true {
            guard let c = current else { throw fail("unterminated string") }
            if c == UInt8(ascii: "\"") {
                if out.isEmpty {
                    // No escape in it (every escape adds a byte to `out`): validated straight
                    // from the input, with no copy first. Most strings take this path.
                    let run = UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])
                    index += 1
                    guard let string = String(validating: run, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
                    return string
                }
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index]))
                index += 1
                break
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index]))
            index += 1
            guard let e = current else { throw fail("unterminated escape") }
            index += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5c)
            case UInt8(ascii: "/"): out.append(0x2f)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0c)
            case UInt8(ascii: "n"): out.append(0x0a)
            case UInt8(ascii: "r"): out.append(0x0d)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try parseHex4()
                var scalarValue = UInt32(unit)
                if (0xD800...0xDBFF).contains(unit) {
                    guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate in \\u escape") }
                    scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(unit) {
                    throw fail("unpaired surrogate in \\u escape")
                }
                guard let scalar = Unicode.Scalar(scalarValue) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: String(Character(scalar)).utf8)
            default: throw fail("invalid escape \\\(Character(Unicode.Scalar(e)))")
            }
            runStart = index
        }
        guard let string = String(validating: out, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
        return string
    }
}
