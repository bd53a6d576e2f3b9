import Foundation
import Testing

@testable import CoordsCore

@Suite("Offline geocoding")
struct GeocodingTests {
    static let index: PlaceIndex? = try? PlaceIndex.bundled()

    struct KnownAnswers: Decodable {
        struct Answer: Decodable, CustomStringConvertible {
            let kind: String, latitude: Double, longitude: Double, name: String, country_code: String, admin1: String
            let population: UInt32, distance_km: Double
            var description: String { "\(kind) (\(latitude), \(longitude)) → \(name)" }
        }
        let answers: [Answer]
    }

    @Test func bundledSetLoads() throws {
        let index = try PlaceIndex.bundled()
        #expect((30_000...40_000).contains(index.count), "cities15000 has about 34,000 places, got \(index.count)")
        #expect(index.memoryByteCount > index.count * 24)
        #expect(try PlaceIndex.bundled() === index, "the bundled index is loaded once and shared")
    }

    /// 300 answers from an independent brute-force scan in Python over the raw GeoNames JSON
    /// (scripts/make-geocoding-answers.py): cities, open ocean, poles, the antimeridian.
    @Test func matchesIndependentKnownAnswers() throws {
        let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/geocoding-15000.json")
        let known = try JSONDecoder().decode(KnownAnswers.self, from: Data(contentsOf: url))
        #expect(known.answers.count >= 250)
        let index = try PlaceIndex.bundled()
        for answer in known.answers {
            let place = try index.nearestPlace(latitude: answer.latitude, longitude: answer.longitude)
            #expect(place.name == answer.name, "\(answer)")
            #expect(place.countryCode == (answer.country_code.isEmpty ? nil : answer.country_code), "\(answer)")
            #expect(place.population == answer.population, "\(answer)")
            #expect(abs(place.distanceKm - answer.distance_km) < 0.01, "\(answer): \(place.distanceKm) km")
            if answer.country_code == "US" { #expect(place.stateName != nil, "\(answer) has a state") }
        }
    }

    /// The index must return exactly what scoring every place returns, everywhere.
    @Test func indexAgreesWithBruteForceOn20000Points() async throws {
        let index = try PlaceIndex.bundled()
        var rng = SeededGenerator(seed: 0xC0_0A_D5)
        let cities = (0..<200).compactMap { _ in
            try? index.nearestPlace(latitude: Double.random(in: 30...60, using: &rng), longitude: Double.random(in: -10...140, using: &rng))
        }
        var points: [(Double, Double)] = [(90, 0), (-90, 0), (0, 180), (0, -180), (90, 180), (-90, -180), (0, 0)]
        while points.count < 20_000 {
            switch points.count % 4 {
            case 0:  // uniform on the sphere (mostly ocean)
                points.append((asin(Double.random(in: -1...1, using: &rng)) * 180 / .pi, Double.random(in: -180...180, using: &rng)))
            case 1:  // polar caps
                points.append((Double.random(in: 75...90, using: &rng) * (Bool.random(using: &rng) ? 1 : -1), Double.random(in: -180...180, using: &rng)))
            case 2:  // either side of the antimeridian
                points.append((Double.random(in: -80...80, using: &rng), (180 - Double.random(in: 0...1.5, using: &rng)) * (Bool.random(using: &rng) ? 1 : -1)))
            default:  // dense areas: near real places, sometimes exactly on one
                guard let city = cities.randomElement(using: &rng) else { continue }
                let jitter = points.count % 8 == 3 ? 0 : 0.3
                points.append(
                    (
                        min(90, max(-90, city.latitude + Double.random(in: -jitter...jitter, using: &rng))),
                        min(180, max(-180, city.longitude + Double.random(in: -jitter...jitter, using: &rng)))
                    ))
            }
        }
        var mismatches: [String] = []
        for (n, (latitude, longitude)) in points.enumerated() {
            if n % 200 == 0 { await Task.yield() }  // a long scan: let other tests' tasks run in between
            let fast = try index.nearestPlace(latitude: latitude, longitude: longitude)
            let slow = try index.nearestPlaceByScanning(latitude: latitude, longitude: longitude)
            if fast != slow { mismatches.append("(\(latitude), \(longitude)): index \(fast.displayName), scan \(slow.displayName)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(points.count) differ, e.g. \(mismatches.prefix(3))")
    }

    @Test func displayNamesAndPhrases() throws {
        let index = try PlaceIndex.bundled()
        let lisbon = try index.nearestPlace(latitude: 38.7223, longitude: -9.1393)
        #expect(lisbon.displayName == "Lisbon, Portugal")
        #expect(lisbon.stateName == nil)
        #expect(lisbon.phrase() == "in Lisbon, Portugal")
        let austin = try index.nearestPlace(latitude: 30.2672, longitude: -97.7431)
        #expect(austin.displayName == "Austin, Texas")
        #expect(austin.countryName == "United States")
        #expect(austin.distanceKm < 1)
        // The fix's accuracy widens the phrase.
        #expect(austin.phrase(accuracyMetres: 25_000) == "near Austin, Texas")
        let ocean = try index.nearestPlace(latitude: -40, longitude: -130)
        #expect(ocean.distanceKm > 1000)
        #expect(ocean.phrase().hasPrefix("\(Int(ocean.distanceKm.rounded())) km from "))
        let near = Place(
            name: "X", countryCode: "PT", countryName: "Portugal", stateName: nil, population: 1000,
            latitude: 0, longitude: 0, distanceKm: 12)
        #expect(near.phrase() == "near X, Portugal")
        #expect(near.phrase(accuracyMetres: .nan) == "near X, Portugal")
        var unknown = near
        unknown.countryName = nil
        #expect(unknown.displayName == "X")
    }

    @Test(arguments: [(Double.nan, 0.0), (0, .nan), (.infinity, 0), (0, -.infinity), (90.000001, 0), (-91, 0), (0, 180.5), (0, -181)])
    func invalidCoordinatesAreRefused(latitude: Double, longitude: Double) throws {
        let index = try PlaceIndex.bundled()
        #expect(throws: GeocodingError.self) { try index.nearestPlace(latitude: latitude, longitude: longitude) }
        do {
            _ = try index.nearestPlaceByScanning(latitude: latitude, longitude: longitude)
            Issue.record("accepted (\(latitude), \(longitude))")
        } catch {
            #expect(error.code == 700)
        }
    }

    @Test func loadsFromAFileAndReportsUnreadableOnes() throws {
        let directory = try Fixtures.makeTemporaryDirectory("geo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("places.cgeo").path
        try Data(PlaceIndex.bundledBytes()).write(to: URL(fileURLWithPath: path))
        let loaded = try PlaceIndex(contentsOfFile: path)
        #expect(loaded.count == (try PlaceIndex.bundled()).count)
        #expect(try loaded.nearestPlace(latitude: 52.52, longitude: 13.40).displayName == "Berlin, Germany")
        #expect(throws: GeocodingError.unreadableFile(path: path + ".missing", reason: "no such file")) {
            try PlaceIndex(contentsOfFile: path + ".missing")
        }
        do {
            _ = try PlaceIndex(contentsOfFile: directory.path)
            Issue.record("a directory loaded as place data")
        } catch {
            #expect(error.code == 703)
        }
    }

    @Test func damagedDataIsRefusedWithoutTrapping() throws {
        let good = PlaceIndex.bundledBytes()
        #expect(good.count > 40)
        func refused(_ bytes: [UInt8], _ what: String) {
            do {
                _ = try PlaceIndex(bytes: bytes)
                Issue.record("accepted: \(what)")
            } catch {
                #expect([701, 702].contains(error.code), "\(what): \(error)")
            }
        }
        refused([], "empty")
        refused(Array("CGEO".utf8), "magic only")
        for cut in [39, 40, 41, 1000, good.count / 2, good.count - 1] { refused(Array(good.prefix(cut)), "truncated to \(cut)") }
        refused(good + [0], "one byte appended")
        for position in Array(0..<40) + [40, 500, good.count / 2, good.count - 1] {
            var bytes = good
            bytes[position] ^= 0x40
            refused(bytes, "byte \(position) flipped")
        }
        var newer = good
        newer[4] = 2
        #expect(throws: GeocodingError.unsupportedVersion(2)) { try PlaceIndex(bytes: newer) }

        // Records that lie, behind a correct checksum: still refused with a clear reason.
        let countries = Int(good[12]) | Int(good[13]) << 8
        let places = Int(good[8]) | Int(good[9]) << 8 | Int(good[10]) << 16 | Int(good[11]) << 24
        let namesSize = Int(good[16]) | Int(good[17]) << 8 | Int(good[18]) << 16 | Int(good[19]) << 24
        let firstRecord = good.count - namesSize - places * 24
        func resealed(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = good
            change(&bytes)
            bytes.replaceSubrange(20..<40, with: SHA256.hash(Array(bytes[40...])).prefix(20))
            return bytes
        }
        let cases: [(String, (inout [UInt8]) -> Void, String)] = [
            ("latitude", { $0.replaceSubrange(firstRecord..<firstRecord + 4, with: [0x00, 0xE1, 0xF5, 0x05]) }, "coordinates out of range"),
            ("name offset", { $0.replaceSubrange(firstRecord + 12..<firstRecord + 16, with: [0xFF, 0xFF, 0xFF, 0x7F]) }, "outside the names section"),
            (
                "country", { $0.replaceSubrange(firstRecord + 18..<firstRecord + 20, with: [UInt8(countries & 0xFF), UInt8(countries >> 8)]) },
                "refers to country"
            ),
            ("name bytes", { $0[$0.count - namesSize] = 0xFF }, "not UTF-8"),
            ("count", { $0[8] &+= 1 }, "do not add up")
        ]
        for (what, change, reason) in cases {
            do {
                _ = try PlaceIndex(bytes: resealed(change))
                Issue.record("accepted a bad \(what)")
            } catch {
                #expect(error.description.contains(reason), "\(what): \(error)")
            }
        }
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            refused((0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, "random bytes")
        }
    }
}
