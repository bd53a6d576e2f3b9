import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// The bytes of the LMDB store's objects (§12.4): one file per object, `objects/<hex id>` in the
/// data directory (mode 0600), outside the B-tree. A part is written past the stored bytes and
/// synced before the store commits the new length, so a crash or a full disk keeps every byte
/// the store had acknowledged; bytes past the committed length are cut off by the next part.
struct ObjectFiles: Sendable {
    /// `<data directory>/objects`.
    let directory: String
    /// fsync files and the directory (off only for a store opened without durability).
    let sync: Bool

    /// Creates the directory (0700) if needed.
    /// - Throws: ``RelayStoreError`` when it cannot be created.
    init(dataDirectory: String, sync: Bool) throws {
        directory = dataDirectory + "/objects"
        self.sync = sync
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw RelayStoreError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
    }

    func path(_ object: ObjectID) -> String { directory + "/" + Hex.encode(object.bytes) }

    /// Starts an empty file for `object`, dropping any file from before (an expired object's, or
    /// one whose record was never committed). A reader that has the old file open keeps reading it.
    /// - Throws: ``ObjectStoreFull`` for ENOSPC, ``RelayStoreError`` otherwise.
    func create(_ object: ObjectID) throws {
        let path = path(object)
        if unlink(path) != 0, errno != ENOENT { throw failure("remove", path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create", path) }
        defer { close(fd) }
        if sync { try syncDirectory() }
    }

    /// Bytes free for an unprivileged writer on the filesystem that holds the objects (and, in
    /// the data directory, `data.mdb`), or nil when the system does not say.
    func freeBytes() -> UInt64? {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return nil }
        let (free, overflow) = UInt64(stats.f_bavail).multipliedReportingOverflow(by: UInt64(stats.f_frsize))
        return overflow ? UInt64.max : free
    }

    /// Whether writing `count` more bytes would leave less than `floor` bytes free (the mailbox and
    /// the locations need that room on the same disk). An unknown free space passes.
    func wouldPassFloor(adding count: Int, floor: UInt64) -> Bool {
        guard floor > 0, let free = freeBytes() else { return false }
        return free < floor.addingSaturating(UInt64(clamping: count))
    }

    /// Writes `bytes` at `offset` (the committed length), cutting off anything past it first, and
    /// syncs the file.
    /// - Throws: ``ObjectStoreFull`` for ENOSPC, ``RelayStoreError`` otherwise; the committed
    ///   bytes are untouched either way.
    func append(_ object: ObjectID, at offset: UInt64, _ bytes: [UInt8]) throws {
        let path = path(object)
        guard let start = off_t(exactly: offset) else { throw RelayStoreError(description: "object offset \(offset) out of range") }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        guard ftruncate(fd, start) == 0 else { throw failure("truncate", path) }
        let written = try bytes.withUnsafeBytes { buffer in
            try repeatUntilDone(buffer.count, "write", path) { done in
                pwrite(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done, start + off_t(done))
            }
        }
        guard written == bytes.count else { throw failure("write", path) }
        if sync, fsync(fd) != 0 { throw failure("sync", path) }
    }

    /// Up to `count` bytes from `offset` (fewer at the end of the file; empty when it has gone).
    /// - Throws: ``RelayStoreError`` for a read error.
    func read(_ object: ObjectID, offset: UInt64, count: Int) throws -> [UInt8] {
        let path = path(object)
        guard count > 0, let start = off_t(exactly: offset) else { return [] }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return [] }
            throw failure("open", path)
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = try bytes.withUnsafeMutableBytes { buffer in
            try repeatUntilDone(buffer.count, "read", path) { done in
                pread(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done, start + off_t(done))
            }
        }
        bytes.removeLast(count - filled)
        return bytes
    }

    /// The length of `object`'s file, or nil when there is none (e.g. a store restored from a
    /// backup, which copies `data.mdb` alone).
    func length(_ object: ObjectID) -> UInt64? {
        var info = stat()
        guard stat(path(object), &info) == 0, info.st_size >= 0 else { return nil }
        return UInt64(info.st_size)
    }

    /// Removes `object`'s file (nothing when there is none).
    func remove(_ object: ObjectID) {
        _ = unlink(path(object))  // a file that cannot be removed is only space: its record is gone
    }

    /// Calls `step` (a `pread`/`pwrite` of the rest from `done`) until `count` bytes are done or
    /// it returns 0 (the end of the file), retrying EINTR; returns the bytes done.
    private func repeatUntilDone(_ count: Int, _ operation: String, _ path: String, _ step: (Int) -> Int) throws -> Int {
        var done = 0
        while done < count {
            let n = step(done)
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(operation, path)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    private func syncDirectory() throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", directory) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw failure("sync", directory) }
    }

    private func failure(_ operation: String, _ path: String) -> any Error {
        let code = errno
        if code == ENOSPC || code == EDQUOT { return ObjectStoreFull() }
        return RelayStoreError(description: "cannot \(operation) \(path): \(String(cString: strerror(code)))")
    }
}
