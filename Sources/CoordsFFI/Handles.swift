import CCoordsABI
import CoordsCore
import Synchronization

/// Maps opaque C handles to Swift objects. A handle is `(id << 4) | kind`, never a real
/// address, and ids are never reused: a closed, stale, forged or wrong-kind handle is an
/// error (COORDS_ERR_INVALID_HANDLE), not a dangling pointer.
final class HandleTable<Object: AnyObject & Sendable>: Sendable {
    private let kind: UInt
    private let state = Mutex<(next: UInt, objects: [UInt: Object])>((1, [:]))

    init(kind: UInt) { self.kind = kind & 0xF }

    /// Registers `object` and returns its handle.
    func insert(_ object: Object) -> OpaquePointer? {
        let id = state.withLock { state -> UInt in
            let id = state.next
            state.next += 1
            state.objects[id] = object
            return id
        }
        return OpaquePointer(bitPattern: id << 4 | kind)
    }

    /// The object behind `handle`.
    /// - Throws: ``FFIError/null(_:)`` for NULL, ``FFIError/handle`` for anything not live.
    func get(_ handle: OpaquePointer?, _ name: String = "app") throws -> Object {
        let id = try self.id(handle, name)
        guard let object = state.withLock({ $0.objects[id] }) else { throw FFIError.handle }
        return object
    }

    /// Unregisters `handle` and returns its object (so a second close fails).
    func remove(_ handle: OpaquePointer?, _ name: String = "app") throws -> Object {
        let id = try self.id(handle, name)
        guard let object = state.withLock({ $0.objects.removeValue(forKey: id) }) else { throw FFIError.handle }
        return object
    }

    private func id(_ handle: OpaquePointer?, _ name: String) throws -> UInt {
        guard let handle else { throw FFIError.null(name) }
        let bits = UInt(bitPattern: handle)
        guard bits & 0xF == kind else { throw FFIError.handle }
        return bits >> 4
    }
}
