/// One zeroed scratch allocation that stands in for the base address of an empty buffer.
///
/// libsodium declares most pointer parameters `nonnull` even when the length is zero, while an
/// empty Swift array may hand out a `nil` base address. Passing this pointer with a length of 0
/// satisfies the contract; libsodium never reads or writes through it.
nonisolated(unsafe) private let emptyScratch: UnsafeMutableRawPointer = {
    let p = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
    p.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    return p
}()

extension UnsafeRawBufferPointer {
    /// A non-null `UInt8` pointer to the bytes (a scratch pointer when the buffer is empty).
    @inline(__always)
    var u8: UnsafePointer<UInt8> {
        UnsafePointer((baseAddress ?? UnsafeRawPointer(emptyScratch)).assumingMemoryBound(to: UInt8.self))
    }
}

extension UnsafeMutableRawBufferPointer {
    /// A non-null mutable `UInt8` pointer to the bytes (a scratch pointer when the buffer is empty).
    @inline(__always)
    var u8: UnsafeMutablePointer<UInt8> {
        (baseAddress ?? emptyScratch).assumingMemoryBound(to: UInt8.self)
    }
}
