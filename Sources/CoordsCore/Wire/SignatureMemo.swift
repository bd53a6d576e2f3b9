/// Ed25519 signatures found valid ahead of the sequential work that needs them: a mailbox answer's
/// group messages are checked on all cores first (``init(verifying:)``), then opened one by one in
/// order, each check answered from here. A check is remembered by its exact key, signature and
/// message bytes, so an answer can only be the one libsodium gave for those very bytes; anything
/// not remembered (or found invalid) is checked again on the spot.
public struct SignatureMemo: Sendable {
    /// One signature check: who, what signature, over which bytes.
    public struct Check: Hashable, Sendable {
        let key: [UInt8]
        let signature: [UInt8]
        let message: [UInt8]

        /// A check of `signature` by `key` over `message`.
        public init(key: Ed25519PublicKey, signature: [UInt8], message: [UInt8]) {
            self.key = key.rawRepresentation
            self.signature = signature
            self.message = message
        }

        /// Hashes the signature's bytes at once (an array hashes byte by byte, which for a
        /// message of a kilobyte costs more than the rest of a lookup); equality compares all.
        public func hash(into hasher: inout Hasher) {
            signature.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        /// Whether both are the same key, signature and message, byte for byte.
        public static func == (lhs: Check, rhs: Check) -> Bool {
            lhs.signature == rhs.signature && lhs.key == rhs.key && lhs.message == rhs.message
        }
    }

    private var valid: Set<Check> = []

    /// A memo that remembers nothing: every check is made on the spot.
    public init() {}

    /// Makes `checks`, on the caller's thread, and remembers the valid ones.
    /// - Parameter checks: the checks (a key that is not a valid point is simply not valid).
    public init(verifying checks: [Check]) {
        let results = checks.map { check in
            // A key that does not parse as a point is not remembered: the check on the spot refuses it.
            guard let key = try? Ed25519PublicKey(rawRepresentation: check.key) else { return false }
            return key.isValidSignature(check.signature, for: check.message)
        }
        for (check, ok) in zip(checks, results) where ok { valid.insert(check) }
    }

    /// How many checks were found valid ahead.
    public var count: Int { valid.count }

    /// Whether `signature` by `key` over `message` is valid: remembered, or checked now.
    public func isValid(_ signature: [UInt8], by key: Ed25519PublicKey, for message: [UInt8]) -> Bool {
        valid.contains(Check(key: key, signature: signature, message: message)) || key.isValidSignature(signature, for: message)
    }
}
