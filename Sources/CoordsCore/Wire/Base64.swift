internal import CSodium

/// Strict base64 through libsodium (`sodium_bin2base64` / `sodium_base642bin`).
///
/// Decoding accepts only the canonical encoding of its variant: no whitespace, no characters
/// from the other alphabet, no (or, for `.standard`, exactly the right) padding, and zero
/// trailing bits. Anything else is an error, never a best-effort guess.
public enum Base64 {
    /// The two alphabets Coords uses.
    public enum Variant: Sendable {
        /// RFC 4648 section 5 base64url without padding: keys, blobs and signatures in Coords v3.
        case urlSafeNoPadding
        /// RFC 4648 section 4 base64 with padding: envelope payloads and signatures (PROTOCOL.md §7).
        case standard

        var sodiumValue: Int32 {
            switch self {
            case .urlSafeNoPadding: sodium_base64_VARIANT_URLSAFE_NO_PADDING
            case .standard: sodium_base64_VARIANT_ORIGINAL
            }
        }
    }

    /// Encodes `bytes`.
    public static func encode(_ bytes: [UInt8], variant: Variant = .urlSafeNoPadding) -> String {
        bytes.withUnsafeBytes { encode($0, variant: variant) }
    }

    /// Pointer form of ``encode(_:variant:)-([UInt8],_)``.
    public static func encode(_ bytes: UnsafeRawBufferPointer, variant: Variant = .urlSafeNoPadding) -> String {
        let length = sodium_base64_encoded_len(bytes.count, variant.sodiumValue)  // includes the NUL
        return String(unsafeUninitializedCapacity: max(length, 1)) { out in
            guard let base = out.baseAddress else { return 0 }
            let raw = UnsafeMutableRawPointer(base).assumingMemoryBound(to: CChar.self)
            _ = sodium_bin2base64(raw, length, bytes.u8, bytes.count, variant.sodiumValue)
            return max(length - 1, 0)
        }
    }

    /// Appends the base64 of `bytes` to `out` as UTF-8 (no `String` in between: a hot path's
    /// signature goes straight into its JSON).
    public static func append(_ bytes: [UInt8], variant: Variant = .urlSafeNoPadding, to out: inout [UInt8]) {
        let length = sodium_base64_encoded_len(bytes.count, variant.sodiumValue)  // includes the NUL
        let start = out.count
        out.appendZeros(max(length, 1))
        out.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            let raw = UnsafeMutableRawPointer(base + start).assumingMemoryBound(to: CChar.self)
            _ = sodium_bin2base64(raw, length, bytes, bytes.count, variant.sodiumValue)
        }
        out.removeLast()  // the NUL
    }

    /// Decodes canonical base64 of `variant`.
    /// - Parameters:
    ///   - text: the encoded text.
    ///   - variant: base64url without padding (the default) or standard base64 with padding.
    ///   - field: names the value in the error message ("pubkey", "blob", …).
    /// - Throws: ``WireError/invalidBase64(field:)``.
    public static func decode(_ text: String, variant: Variant = .urlSafeNoPadding, field: String = "value") throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decode(UnsafeRawBufferPointer($0), variant: variant, field: field) }
    }

    /// Decodes canonical base64 from UTF-8 bytes; see ``decode(_:variant:field:)-(String,_,_)``.
    public static func decode(_ text: UnsafeRawBufferPointer, variant: Variant = .urlSafeNoPadding, field: String = "value") throws -> [UInt8] {
        if text.isEmpty { return [] }
        let capacity = text.count / 4 * 3 + 3
        var out = [UInt8](repeating: 0, count: capacity)
        var decodedLength = 0
        var end: UnsafePointer<CChar>? = nil
        let chars = UnsafeRawPointer(text.u8).assumingMemoryBound(to: CChar.self)
        let status = out.withUnsafeMutableBytes { o in
            sodium_base642bin(o.u8, capacity, chars, text.count, nil, &decodedLength, &end, variant.sodiumValue)
        }
        guard status == 0, let end, end == chars + text.count else { throw WireError.invalidBase64(field: field) }
        out.removeSubrange(decodedLength...)
        return out
    }
}

extension Ed25519PublicKey {
    /// Parses a Coords id: base64url (no padding) of a valid 32-byte Ed25519 public key.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)`` for bad base64, a wrong length or an invalid point.
    public init(base64URL text: String) throws {
        guard let bytes = try? Base64.decode(text, field: "public key"),
            let key = try? Ed25519PublicKey(rawRepresentation: bytes)
        else {
            throw WireError.invalidPublicKeyID(text)
        }
        self = key
    }

    /// The Coords id: base64url without padding (43 characters).
    public var base64URL: String { Base64.encode(rawRepresentation) }
}

extension Ed25519PublicKey: CustomStringConvertible {
    /// The Coords id (public, safe to print).
    public var description: String { base64URL }
}
