// The C ABI's plumbing: one entry helper every export goes through, argument validation and
// output marshalling. No CoordsCore logic lives in this target.
import CCoordsABI
import CPlatform
import CoordsCore
import Dispatch
import Synchronization

/// `CoordsError *out_error`: where a fallible export reports its code and message (may be NULL).
public typealias ErrorOut = UnsafeMutablePointer<CoordsError>?
/// `CoordsBuffer *out`: a byte or JSON output the caller frees with `coords_buffer_free`.
public typealias BufferOut = UnsafeMutablePointer<CoordsBuffer>?
/// `const char *`: a NUL-terminated UTF-8 argument, borrowed for the call.
public typealias CString = UnsafePointer<CChar>?
/// An opaque handle (`CoordsApp *`, `CoordsPlaces *`, …) issued by this library.
public typealias Handle = OpaquePointer?

/// An argument error of the C ABI (codes 100–199).
struct FFIError: Error {
    let code: Int32
    let message: String

    static func null(_ name: String) -> FFIError { FFIError(code: COORDS_ERR_NULL_ARGUMENT, message: "\(name) must not be NULL") }
    static func tooLarge(_ name: String, _ size: Int, _ maximum: Int) -> FFIError {
        FFIError(code: COORDS_ERR_TOO_LARGE, message: "\(name) is \(size < 0 ? "a negative size" : "\(size) bytes"), more than the maximum of \(maximum)")
    }
    static func invalid(_ message: String) -> FFIError { FFIError(code: COORDS_ERR_INVALID_ARGUMENT, message: message) }
    static let handle = FFIError(code: COORDS_ERR_INVALID_HANDLE, message: "the handle is closed, stale or was never issued by this library")
    static let outOfMemory = FFIError(code: COORDS_ERR_INTERNAL, message: "out of memory while allocating an output buffer")
}

/// The one entry path of every fallible export: runs `body`, maps every thrown error to its
/// stable code and message in `out_error`, and returns the code (0 on success). Nothing thrown
/// escapes to C, and nothing in this target traps.
@inline(__always)
func exported(_ out: UnsafeMutablePointer<CoordsError>?, _ body: () throws -> Void) -> Int32 {
    do {
        try body()
        if let out {
            out.pointee.code = COORDS_OK
            out.pointee.message = nil
        }
        return COORDS_OK
    } catch {
        let (code, message) = describe(error)
        return report(code: code, message: message, into: out)
    }
}

/// Writes `code` and a copy of `message` (malloc, freed by coords_error_free) to `out`.
func report(code: Int32, message: String, into out: UnsafeMutablePointer<CoordsError>?) -> Int32 {
    if let out {
        out.pointee.code = code
        out.pointee.message = strdup(message)
    }
    return code
}

/// The stable code and message of any error.
func describe(_ error: any Error) -> (Int32, String) {
    switch error {
    case let error as FFIError: (error.code, error.message)
    case let error as any CoordsCoreError: (error.code, error.description)
    default: (InternalError.code, InternalError(error).description)  // InternalError.code == COORDS_ERR_INTERNAL (tested)
    }
}

/// What an export can hand back in a `CoordsBuffer` (text, bytes, or JSON).
protocol BufferOutput {
    func write(to out: UnsafeMutablePointer<CoordsBuffer>) throws
}

extension String: BufferOutput {
    func write(to out: UnsafeMutablePointer<CoordsBuffer>) throws { try Output.write(self, to: out) }
}

extension Array: BufferOutput where Element == UInt8 {
    func write(to out: UnsafeMutablePointer<CoordsBuffer>) throws { try Output.write(self, to: out) }
}

extension JSONValue: BufferOutput {
    func write(to out: UnsafeMutablePointer<CoordsBuffer>) throws { try Output.write(self, to: out) }
}

/// An export on an app handle: resolves `handle` (``FFIError/handle`` when it is not an open
/// app), then runs `body` through ``exported(_:_:)``.
func withApp(_ handle: Handle, _ error: ErrorOut, _ body: (CoordsCore.CoordsApp) throws -> Void) -> Int32 {
    exported(error) { try body(try apps.get(handle).app) }
}

/// An export on an app handle that returns one buffer: checks the output pointer (`name` in the
/// error), resolves `handle`, and writes what `body` returns — in that order, as every export
/// validates. The caller frees the buffer with `coords_buffer_free`.
func returning<Result: BufferOutput>(
    _ output: BufferOut, _ name: String, app handle: Handle, _ error: ErrorOut, _ body: (CoordsCore.CoordsApp) throws -> Result
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(output, name)
        try body(try apps.get(handle).app).write(to: out)
    }
}

/// An export that hands a relay's response body to the app and returns what processing it did
/// as JSON in `outcome_json_out` (the caller frees it with `coords_buffer_free`). Checks the
/// output pointer, the handle, then the body (`body`, at most `COORDS_MAX_BODY_BYTES`), and runs
/// `process` on a library task while the calling thread waits.
func processingResponse(
    _ handle: Handle, _ body: UnsafePointer<UInt8>?, _ length: Int, _ outcomeOut: BufferOut, _ error: ErrorOut,
    _ process: @escaping @Sendable (CoordsCore.CoordsApp, [UInt8]) async throws -> JSONValue
) -> Int32 {
    returning(outcomeOut, "outcome_json_out", app: handle, error) { app in
        let bytes = try Argument.body(body, length)
        return try blocking { try await process(app, bytes) }
    }
}

// MARK: Arguments

enum Argument {
    /// A required input pointer.
    static func required<T>(_ pointer: UnsafePointer<T>?, _ name: String) throws -> UnsafePointer<T> {
        guard let pointer else { throw FFIError.null(name) }
        return pointer
    }

    /// A required output pointer.
    static func output<T>(_ pointer: UnsafeMutablePointer<T>?, _ name: String) throws -> UnsafeMutablePointer<T> {
        guard let pointer else { throw FFIError.null(name) }
        return pointer
    }

    /// A relay response body (`body`, `length`), at most `COORDS_MAX_BODY_BYTES`.
    static func body(_ pointer: UnsafePointer<UInt8>?, _ length: Int) throws -> [UInt8] {
        try bytes(pointer, length, "body", maximum: Int(COORDS_MAX_BODY_BYTES))
    }

    /// A required output buffer, emptied so the host may free it whatever happens next.
    static func buffer(_ pointer: UnsafeMutablePointer<CoordsBuffer>?, _ name: String) throws -> UnsafeMutablePointer<CoordsBuffer> {
        let out = try output(pointer, name)
        out.pointee = CoordsBuffer(data: nil, len: 0)
        return out
    }

    /// `length` bytes at `pointer` (NULL allowed when `length` is 0), at most `maximum`.
    static func bytes(_ pointer: UnsafePointer<UInt8>?, _ length: Int, _ name: String, maximum: Int) throws -> [UInt8] {
        guard length >= 0, length <= maximum else { throw FFIError.tooLarge(name, length, maximum) }
        if length == 0 { return [] }
        guard let pointer else { throw FFIError.null(name) }
        return Array(UnsafeBufferPointer(start: pointer, count: length))
    }

    /// Exactly `count` bytes (keys, seeds, signatures).
    static func fixed(_ pointer: UnsafePointer<UInt8>?, _ count: Int, _ name: String) throws -> [UInt8] {
        guard let pointer else { throw FFIError.null(name) }
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    /// A 32-byte seed, as a signing key; the temporary copy is wiped.
    static func identity(_ pointer: UnsafePointer<UInt8>?, _ name: String = "seed") throws -> Ed25519SigningKey {
        guard let pointer else { throw FFIError.null(name) }
        let seed = SecretBytes(count: 32) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: 32)) }
        return try Ed25519SigningKey(seed: seed)
    }

    /// A 32-byte Ed25519 public key.
    static func publicKey(_ pointer: UnsafePointer<UInt8>?, _ name: String) throws -> Ed25519PublicKey {
        try Ed25519PublicKey(rawRepresentation: fixed(pointer, 32, name))
    }

    /// A NUL-terminated UTF-8 string of at most COORDS_MAX_STRING_BYTES bytes.
    static func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
        guard let pointer else { throw FFIError.null(name) }
        let limit = Int(COORDS_MAX_STRING_BYTES)
        let length = strnlen(pointer, limit + 1)
        guard length <= limit else { throw FFIError.tooLarge(name, length, limit) }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FFIError(code: COORDS_ERR_INVALID_UTF8, message: "\(name) is not valid UTF-8")
        }
        return text
    }

    /// Like ``string(_:_:)`` but NULL means nil.
    static func optionalString(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String? {
        guard pointer != nil else { return nil }
        return try string(pointer, name)
    }

    /// A JSON argument (parsed strictly).
    static func json(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> JSONValue {
        try JSONValue.parse(try string(pointer, name))
    }

    /// A validated location.
    static func location(_ pointer: UnsafePointer<CoordsLocation>?, _ name: String) throws -> Location {
        let fix = try required(pointer, name).pointee
        return try Location(
            latitude: fix.latitude, longitude: fix.longitude, altitude: fix.altitude,
            accuracy: fix.accuracy, timestamp: fix.timestamp_ms)
    }
}

// MARK: Outputs

enum Output {
    /// Copies `bytes` into a malloc'd buffer with a trailing NUL (not counted in `len`).
    static func write(_ bytes: [UInt8], to out: UnsafeMutablePointer<CoordsBuffer>) throws {
        guard let memory = malloc(bytes.count + 1)?.assumingMemoryBound(to: UInt8.self) else { throw FFIError.outOfMemory }
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { memory.update(from: base, count: source.count) }
        }
        memory[bytes.count] = 0
        out.pointee = CoordsBuffer(data: memory, len: bytes.count)
    }

    static func write(_ text: String, to out: UnsafeMutablePointer<CoordsBuffer>) throws {
        try write(Array(text.utf8), to: out)
    }

    static func write(_ json: JSONValue, to out: UnsafeMutablePointer<CoordsBuffer>) throws {
        try write(json.serialized(), to: out)
    }

    /// Copies exactly `bytes.count` bytes into caller memory.
    static func copy(_ bytes: [UInt8], to out: UnsafeMutablePointer<UInt8>) {
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { out.update(from: base, count: source.count) }
        }
    }
}

// MARK: Calling the actors from C threads

/// A result handed from a task to the C thread that waits for it (set on that same thread).
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

/// Runs the jobs of one C call on the thread that made it: the task of ``blocking(_:)`` prefers
/// this executor (SE-0417), so its code — and the managers' (default actors run on the task's
/// preferred executor) — runs here, and the library starts no threads of its own: no Swift
/// concurrency pool threads appear in a host that only calls the C ABI.
final class CallerThreadExecutor: TaskExecutor, @unchecked Sendable {  // the queue is behind its Mutex
    private let jobs = Mutex<[UnownedJob]>([])
    private let wake = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    /// Runs queued jobs on this thread until `finished()` holds with nothing queued.
    func run(until finished: () -> Bool) {
        while true {
            let next = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next {
                next.runSynchronously(on: asUnownedTaskExecutor())
                continue
            }
            if finished() { return }
            wake.wait()  // a job resumed from elsewhere (none in the core today) wakes it
        }
    }

    /// Lets ``run(until:)`` look at `finished` again.
    func poke() { wake.signal() }
}

/// Runs `body` on the calling C thread (``CallerThreadExecutor``) and returns when it finishes.
/// No other thread takes part: a host that calls the C ABI runs no thread but its own.
func blocking<T>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let executor = CallerThreadExecutor()
    let done = Atomic<Bool>(false)
    Task(executorPreference: executor) {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.store(true, ordering: .releasing)
        executor.poke()
    }
    executor.run { done.load(ordering: .acquiring) }
    guard let result = box.result else { throw FFIError(code: COORDS_ERR_INTERNAL, message: "a library task ended without a result") }
    return try result.get()
}
