import CGeoData
import CPlatform

/// Offline reverse geocoding: the nearest named place to a position, from data bundled in the
/// library (GeoNames `cities15000`, about 34,000 places) or loaded from a file (the larger
/// `cities1000` set, about 170,000 places, built by `scripts/build-geodata.py --large`).
/// Nothing ever touches the network.
///
/// The choice rule is the reference core's: the place with the lowest
/// `haversine distance (km, R = 6371) − 0.5 × ln(max(population, 1))`, so a big city a little
/// further away wins over a hamlet next door. Ties go to the place stored first.
///
/// The index answers exactly what a scan of every place answers
/// (``nearestPlaceByScanning(latitude:longitude:)``), typically hundreds of times faster: places
/// are stored as an implicit k-d tree over unit vectors, and each subtree keeps its bounding box
/// and its largest population bonus, so whole subtrees whose best possible score cannot beat
/// the best place found so far are skipped. The boxes are computed from the loaded coordinates
/// themselves, so the answer is exact whatever order the file is in (the order only affects
/// speed).
///
/// ```swift
/// let place = try PlaceIndex.bundled().nearestPlace(latitude: 38.7223, longitude: -9.1393)
/// print(place.displayName)   // Lisboa, Portugal
/// ```
///
/// A `PlaceIndex` is immutable and `Sendable`: share one across threads.
/// The file format (CGEO version 1) is documented in docs/GEOCODING.md.
public final class PlaceIndex: Sendable {
    /// Mean Earth radius used by the haversine distance, in km (as the reference core).
    public static let earthRadiusKm = 6371.0

    /// Number of places.
    public var count: Int { records.count }

    /// Heap memory held by the loaded index in bytes (records, names, search arrays), for hosts
    /// that budget memory. The bundled file's bytes themselves are part of the library image.
    public let memoryByteCount: Int

    private let records: [Record]
    private let names: [UInt8]
    private let countries: [(code: String, name: String)]
    private let states: [String: String]
    /// Per place, for scoring: latitude (rad), cos(latitude), longitude (rad), population bonus.
    private let scoring: [Scoring]
    /// Per subtree, stored at its root (the middle of its range): bounding box over unit vectors
    /// and the largest population bonus inside.
    private let nodes: [Node]

    struct Record {
        var latitudeE6: Int32
        var longitudeE6: Int32
        var population: UInt32
        var nameOffset: UInt32
        var nameLength: UInt8
        var countryIndex: UInt16
        var admin1: (UInt8, UInt8)
    }

    struct Scoring {
        var latitude: Double
        var cosLatitude: Double
        var longitude: Double
        var bonus: Double
    }

    struct Node {
        var min: (Double, Double, Double)
        var max: (Double, Double, Double)
        var maxBonus: Double
    }

    // MARK: Loading

    /// A copy of the bundled CGEO file (empty if the library was built without it).
    static func bundledBytes() -> [UInt8] {
        guard let start = cgeo_bundled_bytes() else { return [] }
        return [UInt8](UnsafeBufferPointer(start: start, count: cgeo_bundled_size()))
    }

    private static let bundledIndex: Result<PlaceIndex, GeocodingError> = Result { () throws(GeocodingError) in
        try PlaceIndex(bytes: bundledBytes())
    }

    /// The index over the bundled GeoNames `cities15000` set (about 34,000 places), loaded and
    /// checked on first use (a few milliseconds) and shared afterwards.
    /// - Throws: ``GeocodingError/damagedData(_:)`` only if the library itself is damaged.
    public static func bundled() throws(GeocodingError) -> PlaceIndex {
        try bundledIndex.get()
    }

    /// Loads a CGEO file, for example the `cities1000` set built by
    /// `scripts/build-geodata.py --large <dir>`. The file is read once and not kept open.
    /// - Throws: ``GeocodingError/unreadableFile(path:reason:)`` (missing, unreadable, over
    ///   256 MiB), and what ``init(bytes:)`` throws.
    public convenience init(contentsOfFile path: String) throws(GeocodingError) {
        let bytes: [UInt8]?
        do {
            bytes = try Files.read(path, limit: 1 << 28)
        } catch {
            switch error {
            case .system(let operation, let code):
                throw .unreadableFile(path: path, reason: "\(operation) failed: \(String(cString: strerror(code)))")
            case .tooLarge(let limit):
                throw .unreadableFile(path: path, reason: "larger than \(limit >> 20) MiB")
            }
        }
        guard let bytes else { throw .unreadableFile(path: path, reason: "no such file") }
        try self.init(bytes: bytes)
    }

    /// Parses and checks a CGEO file held in memory (the caller keeps its array; the index copies
    /// what it needs).
    /// - Throws: ``GeocodingError/damagedData(_:)`` (bad magic, checksum mismatch, truncation,
    ///   out-of-range coordinates, names that are not UTF-8, no places),
    ///   ``GeocodingError/unsupportedVersion(_:)``.
    public init(bytes: [UInt8]) throws(GeocodingError) {
        let file = try CGEOFile(bytes)
        records = file.records
        names = file.names
        countries = file.countries
        states = file.states
        scoring = file.records.map { r in
            let latitude = Double(r.latitudeE6) / 1e6 * .pi / 180
            return Scoring(
                latitude: latitude, cosLatitude: cos(latitude), longitude: Double(r.longitudeE6) / 1e6 * .pi / 180,
                bonus: 0.5 * log(Double(max(r.population, 1))))
        }
        nodes = Self.buildNodes(records: file.records, scoring: scoring)
        memoryByteCount =
            records.capacity * MemoryLayout<Record>.stride + names.capacity
            + scoring.capacity * MemoryLayout<Scoring>.stride + nodes.capacity * MemoryLayout<Node>.stride
            + countries.reduce(0) { $0 + 32 + $1.code.utf8.count + $1.name.utf8.count }
            + states.reduce(0) { $0 + 32 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// Computes every subtree's bounding box and largest bonus, bottom-up.
    private static func buildNodes(records: [Record], scoring: [Scoring]) -> [Node] {
        let empty = Node(min: (.infinity, .infinity, .infinity), max: (-.infinity, -.infinity, -.infinity), maxBonus: -.infinity)
        var nodes = [Node](repeating: empty, count: records.count)
        func build(_ lo: Int, _ hi: Int) -> Node {
            guard lo < hi else { return empty }
            let mid = (lo + hi) / 2
            let left = build(lo, mid)
            let right = build(mid + 1, hi)
            let p = unitVector(scoring[mid])
            var node = Node(min: p, max: p, maxBonus: scoring[mid].bonus)
            for child in [left, right] {
                node.min = (Swift.min(node.min.0, child.min.0), Swift.min(node.min.1, child.min.1), Swift.min(node.min.2, child.min.2))
                node.max = (Swift.max(node.max.0, child.max.0), Swift.max(node.max.1, child.max.1), Swift.max(node.max.2, child.max.2))
                node.maxBonus = Swift.max(node.maxBonus, child.maxBonus)
            }
            nodes[mid] = node
            return node
        }
        _ = build(0, records.count)
        return nodes
    }

    @inline(__always)
    private static func unitVector(_ s: Scoring) -> (Double, Double, Double) {
        (s.cosLatitude * cos(s.longitude), s.cosLatitude * sin(s.longitude), sin(s.latitude))
    }

    // MARK: Lookup

    /// The nearest place to a position, by the reference rule (see the type's documentation).
    /// - Throws: ``GeocodingError/invalidCoordinate(_:)`` for NaN, infinities, |latitude| > 90 or
    ///   |longitude| > 180.
    public func nearestPlace(latitude: Double, longitude: Double) throws(GeocodingError) -> Place {
        let query = try Query(latitude: latitude, longitude: longitude)
        return place(at: search(query), query: query)
    }

    /// The nearest place to a location (its accuracy is not used for the choice; pass it to
    /// ``Place/phrase(accuracyMetres:)``).
    /// - Throws: ``GeocodingError/invalidCoordinate(_:)``.
    public func nearestPlace(to location: Location) throws(GeocodingError) -> Place {
        try nearestPlace(latitude: location.latitude, longitude: location.longitude)
    }

    /// The same answer as ``nearestPlace(latitude:longitude:)`` by scoring every place: the
    /// reference core's algorithm, kept for tests and as the benchmark baseline.
    /// - Throws: ``GeocodingError/invalidCoordinate(_:)``.
    public func nearestPlaceByScanning(latitude: Double, longitude: Double) throws(GeocodingError) -> Place {
        let query = try Query(latitude: latitude, longitude: longitude)
        var best = 0
        var bestScore = Double.infinity
        scoring.withUnsafeBufferPointer { places in
            for i in places.indices {
                let score = query.score(places[i])
                if score < bestScore {
                    best = i
                    bestScore = score
                }
            }
        }
        return place(at: best, query: query)
    }

    /// A validated query point with the values every score needs.
    private struct Query {
        let latitude: Double, cosLatitude: Double, longitude: Double
        let unit: (Double, Double, Double)

        init(latitude: Double, longitude: Double) throws(GeocodingError) {
            guard latitude.isFinite, longitude.isFinite else {
                throw .invalidCoordinate("latitude \(latitude), longitude \(longitude): both must be finite numbers of degrees")
            }
            guard abs(latitude) <= 90 else { throw .invalidCoordinate("latitude \(latitude) is outside -90…90") }
            guard abs(longitude) <= 180 else { throw .invalidCoordinate("longitude \(longitude) is outside -180…180") }
            self.latitude = latitude * .pi / 180
            self.longitude = longitude * .pi / 180
            cosLatitude = cos(self.latitude)
            unit = (cosLatitude * cos(self.longitude), cosLatitude * sin(self.longitude), sin(self.latitude))
        }

        /// Haversine distance to a place in km.
        @inline(__always)
        func distance(_ p: Scoring) -> Double {
            let sinLatitude = sin((p.latitude - latitude) / 2)
            let sinLongitude = sin((p.longitude - longitude) / 2)
            let a = sinLatitude * sinLatitude + cosLatitude * p.cosLatitude * sinLongitude * sinLongitude
            return 2 * PlaceIndex.earthRadiusKm * asin(Swift.min(1, a.squareRoot()))
        }

        /// The reference score: distance minus the population bonus (lower is better).
        @inline(__always)
        func score(_ p: Scoring) -> Double { distance(p) - p.bonus }

        /// A lower bound on the score of any place in the subtree `node`: the great-circle
        /// distance to its bounding box (from the straight-line distance between unit vectors)
        /// minus its largest bonus, less a margin far above floating-point error so rounding
        /// can never prune the true answer.
        @inline(__always)
        func lowerBound(_ node: Node) -> Double {
            let dx = Swift.max(node.min.0 - unit.0, 0, unit.0 - node.max.0)
            let dy = Swift.max(node.min.1 - unit.1, 0, unit.1 - node.max.1)
            let dz = Swift.max(node.min.2 - unit.2, 0, unit.2 - node.max.2)
            let chord = (dx * dx + dy * dy + dz * dz).squareRoot()
            return 2 * PlaceIndex.earthRadiusKm * asin(Swift.min(1, chord / 2)) - node.maxBonus - 1e-6
        }
    }

    /// Branch and bound over the implicit tree; returns the index of the best place (lowest
    /// score, then lowest index, exactly as the scan).
    private func search(_ query: Query) -> Int {
        scoring.withUnsafeBufferPointer { places in
            nodes.withUnsafeBufferPointer { nodes in
                var best = Int.max
                var bestScore = Double.infinity
                func visit(_ lo: Int, _ hi: Int, _ bound: Double) {
                    guard lo < hi, bound <= bestScore else { return }
                    let mid = (lo + hi) / 2
                    let score = query.score(places[mid])
                    if score < bestScore || (score == bestScore && mid < best) {
                        best = mid
                        bestScore = score
                    }
                    let leftBound = mid > lo ? query.lowerBound(nodes[(lo + mid) / 2]) : .infinity
                    let rightBound = hi > mid + 1 ? query.lowerBound(nodes[(mid + 1 + hi) / 2]) : .infinity
                    if leftBound <= rightBound {
                        visit(lo, mid, leftBound)
                        visit(mid + 1, hi, rightBound)
                    } else {
                        visit(mid + 1, hi, rightBound)
                        visit(lo, mid, leftBound)
                    }
                }
                visit(0, places.count, -.infinity)
                return best
            }
        }
    }

    private func place(at index: Int, query: Query) -> Place {
        let r = records[index]
        let name = String(decoding: names[Int(r.nameOffset)..<Int(r.nameOffset) + Int(r.nameLength)], as: UTF8.self)
        let country = Int(r.countryIndex) < countries.count ? countries[Int(r.countryIndex)] : nil
        var state: String?
        if country?.code == "US", r.admin1.0 != 0 {
            state = states[String(decoding: [r.admin1.0, r.admin1.1], as: UTF8.self)]
        }
        return Place(
            name: name, countryCode: country?.code, countryName: country?.name, stateName: state,
            population: r.population, latitude: Double(r.latitudeE6) / 1e6, longitude: Double(r.longitudeE6) / 1e6,
            distanceKm: query.distance(scoring[index]))
    }
}

/// The parsed sections of a CGEO version 1 file (format in docs/GEOCODING.md and
/// scripts/build-geodata.py). Every read is bounds-checked; nothing here can trap.
private struct CGEOFile {
    static let headerSize = 40
    static let recordSize = 24

    var records: [PlaceIndex.Record] = []
    var names: [UInt8] = []
    var countries: [(code: String, name: String)] = []
    var states: [String: String] = [:]

    init(_ bytes: [UInt8]) throws(GeocodingError) {
        var reader = Reader(bytes: bytes)
        guard bytes.count >= Self.headerSize else { throw .damagedData("\(bytes.count) bytes is shorter than the 40-byte header") }
        guard try reader.bytes(4) == Array("CGEO".utf8) else { throw .damagedData("not a CGEO file (bad magic)") }
        let version = try reader.u8()
        guard version == 1 else { throw .unsupportedVersion(version) }
        guard try reader.bytes(3) == [0, 0, 0] else { throw .damagedData("unknown flags or reserved bits set in the header") }
        let placeCount = Int(try reader.u32())
        let countryCount = Int(try reader.u16())
        let stateCount = Int(try reader.u16())
        let namesSize = Int(try reader.u32())
        let checksum = try reader.bytes(20)
        guard Array(SHA256.hash(Array(bytes[Self.headerSize...])).prefix(20)) == checksum else {
            throw .damagedData("checksum mismatch (the file is truncated or altered)")
        }
        guard placeCount > 0 else { throw .damagedData("the file holds no places") }

        for _ in 0..<countryCount { countries.append(try reader.codeAndName("country")) }
        for _ in 0..<stateCount {
            let state = try reader.codeAndName("state")
            states[state.code] = state.name
        }
        guard placeCount <= (reader.remaining - namesSize) / Self.recordSize,
            reader.remaining == placeCount * Self.recordSize + namesSize
        else {
            throw .damagedData("section sizes do not add up to the file size")
        }
        // The sizes were checked above, so every record read below is in bounds.
        let base = reader.offset
        records = bytes.withUnsafeBytes { raw in
            (0..<placeCount).map { i in
                let at = base + i * Self.recordSize
                func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at + o, as: UInt32.self)) }
                return PlaceIndex.Record(
                    latitudeE6: Int32(bitPattern: u32(0)), longitudeE6: Int32(bitPattern: u32(4)), population: u32(8),
                    nameOffset: u32(12), nameLength: raw[at + 16],
                    countryIndex: UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: at + 18, as: UInt16.self)),
                    admin1: (raw[at + 20], raw[at + 21]))
            }
        }
        reader.offset += placeCount * Self.recordSize
        for (i, record) in records.enumerated() {
            guard abs(Int(record.latitudeE6)) <= 90_000_000, abs(Int(record.longitudeE6)) <= 180_000_000 else {
                throw .damagedData("place \(i) has coordinates out of range")
            }
            guard record.nameLength > 0, Int(record.nameOffset) + Int(record.nameLength) <= namesSize else {
                throw .damagedData("place \(i) has a name outside the names section")
            }
            guard record.countryIndex == 0xFFFF || Int(record.countryIndex) < countryCount else {
                throw .damagedData("place \(i) refers to country \(record.countryIndex) of \(countryCount)")
            }
        }
        names = try reader.bytes(namesSize)
        for (i, r) in records.enumerated()
        where String(validating: names[Int(r.nameOffset)..<Int(r.nameOffset) + Int(r.nameLength)], as: UTF8.self) == nil {
            throw .damagedData("place \(i) has a name that is not UTF-8")
        }
    }

    /// A little-endian cursor that throws instead of reading past the end.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var remaining: Int { bytes.count - offset }

        mutating func bytes(_ n: Int) throws(GeocodingError) -> [UInt8] {
            guard n >= 0, n <= remaining else { throw .damagedData("truncated at byte \(offset)") }
            defer { offset += n }
            return Array(bytes[offset..<offset + n])
        }

        mutating func u8() throws(GeocodingError) -> UInt8 { try bytes(1)[0] }

        mutating func u16() throws(GeocodingError) -> UInt16 {
            let b = try bytes(2)
            return UInt16(b[0]) | UInt16(b[1]) << 8
        }

        mutating func u32() throws(GeocodingError) -> UInt32 {
            let b = try bytes(4)
            return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        }

        /// A table entry: two ASCII letters, a length byte, a UTF-8 name.
        mutating func codeAndName(_ what: String) throws(GeocodingError) -> (code: String, name: String) {
            let code = try bytes(2)
            let name = try bytes(Int(try u8()))
            guard code.allSatisfy({ $0 < 0x80 }), let text = String(validating: name, as: UTF8.self) else {
                throw .damagedData("a \(what) entry is not ASCII/UTF-8")
            }
            return (String(decoding: code.filter { $0 != 0 }, as: UTF8.self), text)
        }
    }
}

/// Which place data an app uses to name friends' positions.
public enum PlaceSource: Sendable {
    /// The bundled `cities15000` set (loaded on first use).
    case bundled
    /// An index the host loaded, for example `PlaceIndex(contentsOfFile:)` on the `cities1000` set.
    case index(PlaceIndex)
    /// No geocoding: ``FriendLocation/place`` stays nil.
    case none

    /// The nearest place to `location`, or nil (geocoding off, or the location is invalid).
    func nearest(to location: Location) -> Place? {
        switch self {
        // A place name is optional decoration: no index or an invalid location shows no place.
        case .bundled: try? PlaceIndex.bundled().nearestPlace(to: location)
        case .index(let index): try? index.nearestPlace(to: location)  // likewise
        case .none: nil
        }
    }
}
