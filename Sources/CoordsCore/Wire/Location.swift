/// A position fix as hosts hand it to CoordsCore.
///
/// Create one with ``init(latitude:longitude:altitude:accuracy:timestamp:)``, which refuses
/// NaN, infinities, |latitude| > 90 and |longitude| > 180 before anything is encoded.
/// Locations *decoded* from the wire are not re-validated: PROTOCOL.md §2 lets any 20-byte
/// value through, so a peer's location may lie outside those ranges.
public struct Location: Sendable, Hashable, Codable {
    /// Degrees north (−90…90).
    public var latitude: Double
    /// Degrees east (−180…180).
    public var longitude: Double
    /// Metres above the WGS 84 ellipsoid (sent as whole metres, clamped to ±32767).
    public var altitude: Double
    /// Horizontal accuracy radius in metres (sent as whole metres, 0…65535).
    public var accuracy: Float
    /// Time of the fix, milliseconds since the Unix epoch.
    public var timestamp: UInt64

    /// Creates a validated location.
    /// - Throws: ``WireError/invalidLocation(_:)`` naming the offending field.
    public init(latitude: Double, longitude: Double, altitude: Double = 0, accuracy: Float = 0, timestamp: UInt64) throws {
        self.init(unvalidatedLatitude: latitude, longitude: longitude, altitude: altitude, accuracy: accuracy, timestamp: timestamp)
        try validate()
    }

    /// Creates a location without checks (decoded values, reference-behaviour tests).
    public init(unvalidatedLatitude latitude: Double, longitude: Double, altitude: Double, accuracy: Float, timestamp: UInt64) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.accuracy = accuracy
        self.timestamp = timestamp
    }

    /// Checks the rules of the public API (PROTOCOL.md §2).
    /// - Throws: ``WireError/invalidLocation(_:)``.
    public func validate() throws {
        guard latitude.isFinite else { throw WireError.invalidLocation("latitude is \(latitude); it must be a finite number of degrees") }
        guard longitude.isFinite else { throw WireError.invalidLocation("longitude is \(longitude); it must be a finite number of degrees") }
        guard altitude.isFinite else { throw WireError.invalidLocation("altitude is \(altitude); it must be a finite number of metres") }
        guard accuracy.isFinite else { throw WireError.invalidLocation("accuracy is \(accuracy); it must be a finite number of metres") }
        guard abs(latitude) <= 90 else { throw WireError.invalidLocation("latitude \(latitude) is outside −90…90 degrees") }
        guard abs(longitude) <= 180 else { throw WireError.invalidLocation("longitude \(longitude) is outside −180…180 degrees") }
    }

    /// The 20-byte wire encoding of this location (rounding and clamping of §2).
    public var wire: WireLocation { WireLocation(self) }
}

/// The 20-byte plaintext of a Coords v3 blob (PROTOCOL.md §2), all fields big-endian:
///
/// ```
/// lat i32 µdeg | lon i32 µdeg | alt i16 m | accuracy u16 m | timestamp u64 ms
/// ```
public struct WireLocation: Sendable, Hashable {
    /// Size of the encoding.
    public static let byteCount = 20

    /// Latitude in microdegrees.
    public var latitudeE6: Int32
    /// Longitude in microdegrees.
    public var longitudeE6: Int32
    /// Altitude in whole metres.
    public var altitude: Int16
    /// Accuracy in whole metres.
    public var accuracy: UInt16
    /// Fix time in milliseconds since the Unix epoch.
    public var timestamp: UInt64

    /// Creates the encoding from its fields.
    public init(latitudeE6: Int32, longitudeE6: Int32, altitude: Int16, accuracy: UInt16, timestamp: UInt64) {
        self.latitudeE6 = latitudeE6
        self.longitudeE6 = longitudeE6
        self.altitude = altitude
        self.accuracy = accuracy
        self.timestamp = timestamp
    }

    /// Encodes a location exactly like the reference encoder: degrees × 10⁶ rounded half away
    /// from zero; altitude truncated toward zero and clamped to Int16; accuracy truncated,
    /// negative → 0, capped at 65535; NaN → 0 and infinities saturate. Never traps.
    public init(_ location: Location) {
        latitudeE6 = Self.saturating(location.latitude * 1_000_000, .toNearestOrAwayFromZero)
        longitudeE6 = Self.saturating(location.longitude * 1_000_000, .toNearestOrAwayFromZero)
        altitude = Self.saturating(location.altitude, .towardZero)
        accuracy = Self.saturating(Double(location.accuracy), .towardZero)
        timestamp = location.timestamp
    }

    /// Decodes 20 bytes (any value is accepted).
    /// - Throws: ``WireError/invalidWireLocationLength(_:)`` when not exactly 20 bytes.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else { throw WireError.invalidWireLocationLength(bytes.count) }
        self = bytes.withUnsafeBytes { WireLocation(unchecked: $0) }
    }

    /// Decodes from a buffer the caller guarantees holds at least 20 bytes.
    init(unchecked b: UnsafeRawBufferPointer) {
        func be<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            var value: T = 0
            for i in 0..<MemoryLayout<T>.size { value = value << 8 | T(truncatingIfNeeded: b[offset + i]) }
            return value
        }
        latitudeE6 = be(0, Int32.self)
        longitudeE6 = be(4, Int32.self)
        altitude = be(8, Int16.self)
        accuracy = be(10, UInt16.self)
        timestamp = be(12, UInt64.self)
    }

    /// The 20 bytes.
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.byteCount) { buffer, count in
            write(into: UnsafeMutableRawBufferPointer(buffer))
            count = Self.byteCount
        }
    }

    /// Writes the 20 bytes to the start of `out` (which must hold at least 20 bytes).
    func write(into out: UnsafeMutableRawBufferPointer) {
        func put<T: FixedWidthInteger>(_ value: T, _ offset: Int) {
            let size = MemoryLayout<T>.size
            for i in 0..<size { out[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * (size - 1 - i))) }
        }
        put(latitudeE6, 0)
        put(longitudeE6, 4)
        put(altitude, 8)
        put(accuracy, 10)
        put(timestamp, 12)
    }

    /// The decoded location (microdegrees ÷ 10⁶, whole metres). Not validated: see ``Location``.
    public var location: Location {
        Location(
            unvalidatedLatitude: Double(latitudeE6) / 1_000_000, longitude: Double(longitudeE6) / 1_000_000,
            altitude: Double(altitude), accuracy: Float(accuracy), timestamp: timestamp)
    }

    /// `value` rounded by `rule` and clamped to `Integer`'s range; NaN is 0 (never traps).
    static func saturating<Integer: FixedWidthInteger>(_ value: Double, _ rule: FloatingPointRoundingRule) -> Integer {
        guard !value.isNaN else { return 0 }
        let rounded = value.rounded(rule)
        if rounded >= Double(Integer.max) { return .max }
        if rounded <= Double(Integer.min) { return .min }
        return Integer(rounded)
    }
}
