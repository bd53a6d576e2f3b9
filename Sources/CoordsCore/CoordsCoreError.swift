/// The common shape of every error CoordsCore throws.
///
/// Each layer has its own error enum (``CryptoError``, ``WireError``, …) whose cases carry a
/// **stable numeric code**. Codes are grouped in blocks of one hundred per layer so a host can
/// tell the family of a failure from the number alone:
///
/// | Range   | Layer                                   |
/// |---------|-----------------------------------------|
/// | 200–299 | crypto (``CryptoError``)                 |
/// | 300–399 | wire format (``WireError``)             |
/// | 400–499 | store (``StoreError``)                  |
/// | 500–599 | channels (``ChannelError``)             |
/// | 600–699 | managers and keychains                  |
/// | 700–799 | offline geocoding (``GeocodingError``)  |
///
/// Codes are never reused or renumbered; new cases take new numbers. The C ABI passes the code
/// through unchanged as an `int32_t`, together with the error's `description`.
public protocol CoordsCoreError: Error, CustomStringConvertible, Sendable {
    /// The stable numeric code of this error (see the table above).
    var code: Int32 { get }
}
