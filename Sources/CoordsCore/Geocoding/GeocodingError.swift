/// Errors of offline reverse geocoding. Codes 700–709, stable.
public enum GeocodingError: CoordsCoreError, Equatable {
    /// The query is not a position on Earth (NaN, infinite, |latitude| > 90, |longitude| > 180).
    case invalidCoordinate(String)
    /// The place data is not a valid CGEO file: wrong magic, checksum mismatch, truncated,
    /// out-of-range records. Nothing was loaded.
    case damagedData(String)
    /// The place data was written by a newer CGEO version than this build reads.
    case unsupportedVersion(UInt8)
    /// The place data file could not be read.
    case unreadableFile(path: String, reason: String)

    public var code: Int32 {
        switch self {
        case .invalidCoordinate: 700
        case .damagedData: 701
        case .unsupportedVersion: 702
        case .unreadableFile: 703
        }
    }

    public var description: String {
        switch self {
        case .invalidCoordinate(let why): "invalid coordinate: \(why)"
        case .damagedData(let why): "damaged place data: \(why); rebuild it with scripts/build-geodata.py"
        case .unsupportedVersion(let v): "place data format version \(v) is newer than this build reads (version 1); update CoordsCore"
        case .unreadableFile(let path, let why): "cannot read place data \(path): \(why)"
        }
    }
}
