/// Coords v3 location blobs (PROTOCOL.md §3): one location sealed for many recipients.
///
/// ```
/// 0x03 | E_pub (32) | E (u16) | E × [ nonce (12) | AES-GCM(wrap_i, DEK) (48) ] | nonce (12) | AES-GCM(DEK, location) (36)
/// ```
///
/// The sender draws a random DEK and an ephemeral X25519 key `e`. For each recipient R the DEK
/// is encrypted under the raw X25519(e, R) output; the location is encrypted under the DEK.
/// Entries are padded with random 60-byte filler so the blob size only reveals a range of
/// friend counts. Recipients' order: the sender first, then friends, then padding.
public enum LocationBlob {
    /// The version byte.
    public static let version: UInt8 = 0x03
    /// Version, ephemeral public key and entry count.
    public static let headerByteCount = 35
    /// One entry: nonce (12) + encrypted DEK (32) + tag (16).
    public static let entryByteCount = 60
    /// Data nonce (12) + encrypted location (20) + tag (16).
    public static let dataByteCount = 48
    /// Readers refuse anything shorter (a header, one entry, a nonce and a tag).
    public static let minimumByteCount = 123
    /// The most entries a blob may have: the reference relay refuses blobs over 65,536 bytes.
    public static let maximumEntryCount = 1050

    /// The padded entry count E for `recipientCount` real recipients: 0 → 0; up to 64 → the next
    /// power of two; above 64 → the next multiple of 50.
    public static func paddedEntryCount(forRecipientCount n: Int) -> Int {
        if n <= 0 { return 0 }
        if n <= 64 {
            var e = 1
            while e < n { e <<= 1 }
            return e
        }
        let (q, r) = n.quotientAndRemainder(dividingBy: 50)
        return r == 0 ? n : (q + 1) * 50
    }

    /// The size in bytes of a blob with `entryCount` entries (83 + 60·E).
    public static func byteCount(forEntryCount entryCount: Int) -> Int {
        headerByteCount + entryByteCount * entryCount + dataByteCount
    }

    /// Seals `location` for recipients whose X25519 keys are already known (the fast path: a
    /// caller sealing for the same friends every minute converts their keys once and keeps them).
    ///
    /// Randomness is drawn from `random` in this order, which ``ReplayRandomSource`` scripts
    /// rely on: the ephemeral secret (32), the DEK (32), one nonce (12) per recipient, one
    /// 60-byte filler per padding entry, the data nonce (12).
    /// - Parameters:
    ///   - location: the 20-byte plaintext.
    ///   - recipients: X25519 keys, the sender's own first so it can read its blob back.
    ///   - random: the randomness source (system by default).
    /// - Returns: the blob, 83 + 60·E bytes.
    /// - Throws: ``WireError/noRecipients``, ``WireError/tooManyRecipients(count:maximum:)``
    ///   (more than 1050), ``WireError/invalidRecipientKey(index:)`` for a small-order key,
    ///   ``CryptoError/unsupportedHardware``, errors of `random`.
    public static func seal(
        _ location: WireLocation, for recipients: [X25519PublicKey],
        using random: any RandomSource = SystemRandomSource()
    ) throws -> [UInt8] {
        let n = recipients.count
        guard n > 0 else { throw WireError.noRecipients }
        let entryCount = paddedEntryCount(forRecipientCount: n)
        guard entryCount <= maximumEntryCount else { throw WireError.tooManyRecipients(count: n, maximum: maximumEntryCount) }
        try Sodium.ensureAESAvailable()

        let ephemeral = try X25519PrivateKey.generate(using: random)
        // One wiped scratch allocation: DEK (0..<32) and the current wrapping key (32..<64).
        let scratch = SecretBytes(count: 64) { _ in }
        let size = byteCount(forEntryCount: entryCount)
        return try [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
            let out = UnsafeMutableRawBufferPointer(buffer)
            out.initializeMemory(as: UInt8.self, repeating: 0)
            initializedCount = size
            out[0] = version
            ephemeral.publicKey.rawRepresentation.withUnsafeBytes { pub in
                UnsafeMutableRawBufferPointer(rebasing: out[1..<33]).copyMemory(from: pub)
            }
            out[33] = UInt8(truncatingIfNeeded: entryCount >> 8)
            out[34] = UInt8(truncatingIfNeeded: entryCount)

            try scratch.withUnsafeMutableBytes { keys in
                let dek = UnsafeMutableRawBufferPointer(rebasing: keys[0..<32])
                let wrap = UnsafeMutableRawBufferPointer(rebasing: keys[32..<64])
                try random.fill(dek)
                for (i, recipient) in recipients.enumerated() {
                    let entry = headerByteCount + entryByteCount * i
                    let nonce = UnsafeMutableRawBufferPointer(rebasing: out[entry..<entry + 12])
                    try random.fill(nonce)
                    let agreed = recipient.rawRepresentation.withUnsafeBytes { peer in
                        ephemeral.sharedSecret(withRaw: peer.u8, into: wrap.u8)
                    }
                    guard agreed else { throw WireError.invalidRecipientKey(index: i) }
                    AES256GCM.sealRaw(
                        UnsafeRawBufferPointer(dek), key: UnsafeRawBufferPointer(wrap), nonce: UnsafeRawBufferPointer(nonce),
                        associatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                        into: UnsafeMutableRawBufferPointer(rebasing: out[entry + 12..<entry + 60]))
                }
                for j in n..<entryCount {
                    let entry = headerByteCount + entryByteCount * j
                    try random.fill(UnsafeMutableRawBufferPointer(rebasing: out[entry..<entry + entryByteCount]))
                }
                let data = headerByteCount + entryByteCount * entryCount
                let nonce = UnsafeMutableRawBufferPointer(rebasing: out[data..<data + 12])
                try random.fill(nonce)
                var plaintext = (UInt64(0), UInt64(0), UInt32(0))  // 20 bytes on the stack
                withUnsafeMutableBytes(of: &plaintext) { p in
                    location.write(into: p)
                    AES256GCM.sealRaw(
                        UnsafeRawBufferPointer(rebasing: p[0..<WireLocation.byteCount]), key: UnsafeRawBufferPointer(dek),
                        nonce: UnsafeRawBufferPointer(nonce), associatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                        into: UnsafeMutableRawBufferPointer(rebasing: out[data + 12..<size]))
                    Self.wipe(p)
                }
            }
        }
    }

    /// Seals for Ed25519 identities, converting each key to X25519 on the way (what the
    /// reference core does on every upload). Prefer caching the converted keys and calling
    /// ``seal(_:for:using:)-(_,[X25519PublicKey],_)``.
    /// - Throws: ``WireError/invalidRecipientKey(index:)`` for a key that does not convert, and
    ///   the errors of the X25519 form.
    public static func seal(
        _ location: WireLocation, for recipients: [Ed25519PublicKey],
        using random: any RandomSource = SystemRandomSource()
    ) throws -> [UInt8] {
        var converted: [X25519PublicKey] = []
        converted.reserveCapacity(recipients.count)
        for (i, key) in recipients.enumerated() {
            guard let x = try? X25519PublicKey(ed25519: key) else { throw WireError.invalidRecipientKey(index: i) }
            converted.append(x)
        }
        return try seal(location, for: converted, using: random)
    }

    /// Opens a blob with the reader's X25519 key (PROTOCOL.md §3, "Reader").
    /// - Returns: the location (not range-checked; see ``Location``).
    /// - Throws: ``WireError/blobTooShort(actual:minimum:)``, ``WireError/unsupportedBlobVersion(_:)``,
    ///   ``WireError/blobTruncated(entryCount:required:actual:)``, ``WireError/invalidEphemeralKey``,
    ///   ``WireError/notARecipient``, ``WireError/blobDataTampered``,
    ///   ``WireError/invalidLocationPlaintext(length:)``, ``CryptoError/unsupportedHardware``.
    public static func open(_ blob: [UInt8], with key: X25519PrivateKey) throws -> WireLocation {
        try blob.withUnsafeBytes { try open($0, with: key) }
    }

    /// Opens a blob with an identity key (converts it to X25519 first; cache the
    /// ``X25519PrivateKey`` when opening many blobs).
    public static func open(_ blob: [UInt8], with identity: Ed25519SigningKey) throws -> WireLocation {
        try open(blob, with: X25519PrivateKey(ed25519: identity))
    }

    /// Pointer form of ``open(_:with:)-([UInt8],X25519PrivateKey)``.
    public static func open(_ blob: UnsafeRawBufferPointer, with key: X25519PrivateKey) throws -> WireLocation {
        try open(blob, keyCount: 1) { _ in key }.location
    }

    /// Opens a blob with the first of several keys that unwraps an entry (PROTOCOL.md §10.9: the
    /// identity key and every signed prekey still kept).
    /// - Parameters:
    ///   - blob: the blob.
    ///   - keys: the reader's keys, tried in order (each agreement is computed once).
    /// - Returns: the location and the index in `keys` of the key that opened it.
    /// - Throws: the errors of ``open(_:with:)-([UInt8],X25519PrivateKey)``; ``WireError/notARecipient``
    ///   when no key opens any entry (or `keys` is empty).
    public static func open(_ blob: [UInt8], withAnyOf keys: [X25519PrivateKey]) throws -> (location: WireLocation, keyIndex: Int) {
        try blob.withUnsafeBytes { bytes in try open(bytes, keyCount: keys.count) { keys[$0] } }
    }

    /// The opening rule of §3 for `keyCount` keys, tried in order.
    @inline(__always)
    static func open(
        _ blob: UnsafeRawBufferPointer, keyCount: Int, key: (Int) -> X25519PrivateKey
    ) throws -> (location: WireLocation, keyIndex: Int) {
        guard blob.count >= minimumByteCount else { throw WireError.blobTooShort(actual: blob.count, minimum: minimumByteCount) }
        guard blob[0] == version else { throw WireError.unsupportedBlobVersion(blob[0]) }
        // X25519 ignores the top bit of a u-coordinate, so a set bit would give a second blob
        // that opens to the same location although the header changed (§3: every header bit is
        // authenticated). Honest senders never set it: crypto_scalarmult_base leaves it clear.
        guard blob[32] & 0x80 == 0 else { throw WireError.invalidEphemeralKey }
        let entryCount = Int(blob[33]) << 8 | Int(blob[34])
        let required = headerByteCount + entryByteCount * entryCount + 12 + AES256GCM.tagByteCount
        guard blob.count >= required else {
            throw WireError.blobTruncated(entryCount: entryCount, required: required, actual: blob.count)
        }
        try Sodium.ensureAESAvailable()

        let scratch = SecretBytes(count: 64) { _ in }
        return try scratch.withUnsafeMutableBytes { keys in
            let shared = UnsafeMutableRawBufferPointer(rebasing: keys[0..<32])
            let dek = UnsafeMutableRawBufferPointer(rebasing: keys[32..<64])
            var found: Int?
            keys: for k in 0..<keyCount {
                guard key(k).sharedSecret(withRaw: blob.u8 + 1, into: shared.u8) else { throw WireError.invalidEphemeralKey }
                let unwrap = AES256GCM.PrecomputedKey(unsafeKey: UnsafeRawPointer(shared.u8))
                for i in 0..<entryCount {
                    let entry = headerByteCount + entryByteCount * i
                    if unwrap.openRaw(
                        UnsafeRawBufferPointer(rebasing: blob[entry + 12..<entry + 60]),
                        nonce: UnsafeRawBufferPointer(rebasing: blob[entry..<entry + 12]),
                        associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: dek)
                    {
                        found = k
                        break keys
                    }
                }
            }
            guard let keyIndex = found else { throw WireError.notARecipient }

            let data = headerByteCount + entryByteCount * entryCount
            let nonce = UnsafeRawBufferPointer(rebasing: blob[data..<data + 12])
            let ciphertext = UnsafeRawBufferPointer(rebasing: blob[(data + 12)...])
            let plaintextLength = ciphertext.count - AES256GCM.tagByteCount
            if plaintextLength == WireLocation.byteCount {
                var plaintext = (UInt64(0), UInt64(0), UInt32(0))
                return try withUnsafeMutableBytes(of: &plaintext) { p in
                    let out = UnsafeMutableRawBufferPointer(rebasing: p[0..<WireLocation.byteCount])
                    guard
                        AES256GCM.openRaw(
                            ciphertext, key: UnsafeRawBufferPointer(dek), nonce: nonce,
                            associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: out)
                    else {
                        throw WireError.blobDataTampered
                    }
                    return (WireLocation(unchecked: UnsafeRawBufferPointer(out)), keyIndex)
                }
            }
            // Wrong length: authenticate anyway, so a corrupted blob says "tampered" and a
            // well-formed blob with a foreign plaintext says what it is.
            var other = [UInt8](repeating: 0, count: plaintextLength)
            let ok = other.withUnsafeMutableBytes { out in
                AES256GCM.openRaw(
                    ciphertext, key: UnsafeRawBufferPointer(dek), nonce: nonce,
                    associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: out)
            }
            guard ok else { throw WireError.blobDataTampered }
            throw WireError.invalidLocationPlaintext(length: plaintextLength)
        }
    }

    /// Overwrites a plaintext scratch buffer (the location is personal data).
    private static func wipe(_ p: UnsafeMutableRawBufferPointer) {
        p.initializeMemory(as: UInt8.self, repeating: 0)
    }
}
