internal import CSodium

/// Lazy, once-only libsodium initialisation shared by every crypto entry point.
///
/// `sodium_init()` is idempotent and thread-safe, and Swift initialises a `static let` exactly
/// once, so the first crypto call from any thread pays for it and later calls read a constant.
/// A failure becomes ``CryptoError/libraryInitializationFailed``; nothing here traps.
enum Sodium {
    /// The result of the one call to `sodium_init()`: 0 (initialised) or 1 (already initialised)
    /// are success, -1 is failure.
    private static let initStatus: Int32 = sodium_init()

    /// Whether this CPU has libsodium's AES-256-GCM (AES-NI + CLMUL). Read after initialisation,
    /// because libsodium detects CPU features in `sodium_init()`.
    static let isAESAvailable: Bool = initStatus >= 0 && crypto_aead_aes256gcm_is_available() == 1

    /// Initialises libsodium on first use.
    /// - Throws: ``CryptoError/libraryInitializationFailed`` when `sodium_init()` fails.
    @inline(__always)
    static func ensureInitialized() throws(CryptoError) {
        guard initStatus >= 0 else { throw .libraryInitializationFailed }
    }

    /// Initialises libsodium and checks that AES-256-GCM can run.
    /// - Throws: ``CryptoError/libraryInitializationFailed`` or ``CryptoError/unsupportedHardware``.
    @inline(__always)
    static func ensureAESAvailable() throws(CryptoError) {
        try ensureInitialized()
        guard isAESAvailable else { throw .unsupportedHardware }
    }
}
