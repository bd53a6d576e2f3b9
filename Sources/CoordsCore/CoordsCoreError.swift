/// The common shape of every error CoordsCore throws.
///
/// Each layer has its own error enum (``CryptoError``, ``WireError``, …) whose cases carry a
/// **stable numeric code**. Codes are grouped in blocks of one hundred per layer so a host can
/// tell the family of a failure from the number alone:
///
/// | Range   | Layer                                   |
/// |---------|-----------------------------------------|
/// | 199     | an internal error (``InternalError``)   |
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

/// A failure no layer of CoordsCore describes: an error from outside the library reached a place
/// that must report a code (a manager's `errorOccurred`, the C ABI). Code 199 — the C ABI's
/// `COORDS_ERR_INTERNAL` — and never 0, which means success there.
public struct InternalError: CoordsCoreError {
    /// The code of every internal error (199).
    public static let code: Int32 = 199

    public var code: Int32 { Self.code }
    public let description: String

    /// Wraps `underlying`, keeping its text.
    public init(_ underlying: any Error) {
        description = "internal error: \(underlying)"
    }
}

extension Error {
    /// This error's stable code: its own when it is a ``CoordsCoreError``, else 199 (``InternalError``).
    public var coordsCode: Int32 {
        (self as? any CoordsCoreError)?.code ?? InternalError.code
    }
}
