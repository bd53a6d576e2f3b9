/// Safety numbers (PROTOCOL.md §7.4): a 30-digit code both friends compute from their two
/// public keys and compare in person or on a call. Equal codes mean neither key was swapped.
///
/// Sort the two keys bytewise; d = SHA-512("CoordsCore/safety-number/v1" ‖ low ‖ high); then
/// 5,200 times d = SHA-512(d ‖ low ‖ high); the first 30 bytes read as six 5-byte big-endian
/// integers, each mod 100,000 and printed as 5 digits, separated by spaces. The result does not
/// depend on which side computes it.
public enum SafetyNumber {
    /// The domain-separation prefix.
    public static let prefix = Array("CoordsCore/safety-number/v1".utf8)
    /// Number of additional SHA-512 iterations.
    public static let iterations = 5200

    /// The code for two identities, e.g. `"72660 59397 08473 30532 75600 80087"`.
    public static func compute(_ a: Ed25519PublicKey, _ b: Ed25519PublicKey) -> String {
        compute(a.rawRepresentation, b.rawRepresentation)
    }

    /// Byte form of ``compute(_:_:)-(Ed25519PublicKey,Ed25519PublicKey)`` (any two byte strings).
    public static func compute(_ a: [UInt8], _ b: [UInt8]) -> String {
        let (low, high) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a)
        let keys = low + high
        var digest = SHA512.hash(prefix + keys)
        var buffer = [UInt8](repeating: 0, count: digest.count + keys.count)
        for (i, byte) in keys.enumerated() { buffer[digest.count + i] = byte }
        for _ in 0..<iterations {
            for (i, byte) in digest.enumerated() { buffer[i] = byte }
            digest = SHA512.hash(buffer)
        }
        var groups: [String] = []
        for group in 0..<6 {
            let value = digest[group * 5..<group * 5 + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000
            let digits = String(value)
            groups.append(String(repeating: "0", count: 5 - digits.count) + digits)
        }
        return groups.joined(separator: " ")
    }
}
