internal import CSodium

/// Owns secret key material (private keys, seeds, DEKs, shared secrets) and wipes it when freed.
///
/// The bytes live in one heap allocation that is overwritten with `sodium_memzero` when the
/// last reference goes away. Equality uses `sodium_memcmp` (constant time for equal lengths).
/// ``description``, ``debugDescription`` and reflection show only the length, so a secret
/// never reaches a log through string interpolation or `dump`.
///
/// The contents are fixed once the initialiser returns, which makes instances safe to share
/// between threads.
public final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// The number of secret bytes.
    public let count: Int

    /// Creates `count` zeroed bytes and lets `initializer` fill them.
    ///
    /// If `initializer` throws, the partially written bytes are wiped before the error propagates.
    /// - Parameters:
    ///   - count: the number of bytes; a negative count is treated as zero.
    ///   - initializer: writes the secret into the buffer it is given (exactly `count` bytes).
    /// - Throws: whatever `initializer` throws.
    public init(count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        let n = max(count, 0)
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(n, 1), alignment: 16)
        p.initializeMemory(as: UInt8.self, repeating: 0, count: max(n, 1))
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: p, count: n))
        } catch {
            sodium_memzero(p, max(n, 1))
            p.deallocate()
            throw error
        }
        pointer = p
        self.count = n
    }

    /// Copies `bytes` into a new secret buffer. The caller remains responsible for wiping its
    /// own copy (an `Array` cannot be wiped reliably; prefer the other initialisers).
    public convenience init(copying bytes: [UInt8]) {
        self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { source in buffer.copyMemory(from: source) }
        }
    }

    /// Copies `bytes` into a new secret buffer; the memory `bytes` points at stays the caller's,
    /// who wipes it (the store opens values into a buffer it wipes itself).
    public convenience init(borrowing bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { buffer in
            if let source = bytes.baseAddress, let target = buffer.baseAddress { target.copyMemory(from: source, byteCount: bytes.count) }
        }
    }

    /// Creates `count` fresh random bytes drawn from `random`.
    /// - Throws: whatever the random source throws (only ``ReplayRandomSource`` can).
    public convenience init(randomCount count: Int, using random: any RandomSource = SystemRandomSource()) throws {
        try self.init(count: count) { buffer in try random.fill(buffer) }
    }

    deinit {
        sodium_memzero(pointer, max(count, 1))
        pointer.deallocate()
    }

    /// Gives `body` read access to the secret bytes for the duration of the call.
    /// The pointer must not escape `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Mutable access for scratch buffers that have not been shared yet (internal hot paths that
    /// reuse one wiped allocation for several intermediate keys). Never call it on a secret that
    /// another thread may read.
    func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// A new secret holding `range` of these bytes (used to split a derived key).
    /// - Throws: ``CryptoError/invalidParameter(_:)`` if `range` is outside `0..<count`.
    public func slice(_ range: Range<Int>) throws -> SecretBytes {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw CryptoError.invalidParameter("range \(range) is outside a \(count)-byte secret")
        }
        return SecretBytes(count: range.count) { buffer in
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: pointer + range.lowerBound, count: range.count))
        }
    }

    /// Copies the secret out as an array. Only for code that must hand the bytes to an API
    /// taking `[UInt8]` (tests, encrypted export); the copy cannot be wiped reliably.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}

extension SecretBytes: Equatable {
    /// Constant-time comparison (`sodium_memcmp`); secrets of different lengths are unequal.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.count == 0 { return true }
        return sodium_memcmp(lhs.pointer, rhs.pointer, lhs.count) == 0
    }
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `SecretBytes(32 bytes, redacted)`: the length only, never the contents.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// An empty mirror, so `dump` and debuggers' summaries show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
