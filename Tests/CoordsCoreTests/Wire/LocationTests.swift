import Testing

@testable import CoordsCore

@Suite struct WireLocationTests {
    static func location(_ v: CoordsV3Vectors.LocationValues) -> Location {
        Location(
            unvalidatedLatitude: v.latitude, longitude: v.longitude, altitude: v.altitude,
            accuracy: Float(v.accuracy), timestamp: v.timestamp)
    }

    @Test(arguments: try CoordsV3Vectors.load().wire_locations)
    func encodesAndDecodesLikeTheReference(_ v: CoordsV3Vectors.WireLocationCase) throws {
        let wire = WireLocation(Self.location(v.input))
        #expect(Hex.encode(wire.bytes) == v.wire_hex)
        let decoded = try WireLocation(bytes: Hex.vector(v.wire_hex))
        #expect(decoded == wire)
        #expect(decoded.location == Self.location(v.decoded))
        // Every vector input is inside the public API's ranges, so validation accepts it.
        #expect(throws: Never.self) { try Self.location(v.input).validate() }
    }

    @Test func publicAPIRejectsNonFiniteAndOutOfRangeCoordinates() {
        let bad: [(Double, Double, Double, Float)] = [
            (.nan, 0, 0, 0), (0, .nan, 0, 0), (.infinity, 0, 0, 0), (0, -.infinity, 0, 0),
            (90.000001, 0, 0, 0), (-90.5, 0, 0, 0), (0, 180.000001, 0, 0), (0, -181, 0, 0),
            (0, 0, .nan, 0), (0, 0, .infinity, 0), (0, 0, 0, .nan), (0, 0, 0, .infinity)
        ]
        for (lat, lon, alt, acc) in bad {
            #expect(throws: WireError.self, "\(lat) \(lon) \(alt) \(acc)") {
                try Location(latitude: lat, longitude: lon, altitude: alt, accuracy: acc, timestamp: 1)
            }
        }
        #expect(throws: Never.self) { try Location(latitude: -90, longitude: 180, timestamp: 0) }
    }

    @Test func referenceEncoderSaturatesWhatTheAPIRefuses() {
        let wild = Location(unvalidatedLatitude: .nan, longitude: .infinity, altitude: -.infinity, accuracy: .nan, timestamp: 9)
        let wire = WireLocation(wild)
        #expect(wire.latitudeE6 == 0)
        #expect(wire.longitudeE6 == .max)
        #expect(wire.altitude == .min)
        #expect(wire.accuracy == 0)
        let huge = WireLocation(Location(unvalidatedLatitude: -1e300, longitude: 2147.5, altitude: 1e9, accuracy: 1e30, timestamp: 0))
        #expect(huge.latitudeE6 == .min)
        #expect(huge.longitudeE6 == .max)
        #expect(huge.altitude == .max)
        #expect(huge.accuracy == .max)
    }

    @Test func decoderAcceptsAnyTwentyBytesAndOnlyTwenty() throws {
        let extreme = try WireLocation(bytes: [UInt8](repeating: 0x7f, count: 20))
        #expect(extreme.latitudeE6 == 0x7f7f_7f7f)
        for count in [0, 19, 21, 40] {
            #expect(throws: WireError.invalidWireLocationLength(count)) { try WireLocation(bytes: [UInt8](repeating: 0, count: count)) }
        }
    }
}
