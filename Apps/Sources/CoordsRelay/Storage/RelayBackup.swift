import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Hot backups of an LMDB relay and their restore (`coords-relay backup` / `restore`,
/// docs/RELAY.md "Backups"). A backup is a directory (0700) holding one compacted `data.mdb`
/// (0600), written from one read snapshot while the relay keeps serving, then opened once to
/// check it before anything is reported.
public enum RelayBackup {
    /// What a backup or restore holds.
    public struct Summary: Sendable, Equatable {
        /// A summary from its counts.
        public init(blobs: Int, messages: Int, bytes: Int) {
            self.blobs = blobs
            self.messages = messages
            self.bytes = bytes
        }

        /// Stored uploads (blobs).
        public var blobs: Int
        /// Mailbox envelopes waiting.
        public var messages: Int
        /// Size of `data.mdb` in bytes.
        public var bytes: Int
    }

    /// A refusal, in one sentence, with the exit status the command uses.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// The sysexits(3) status of a failed backup, restore or check.
        public enum Status: Int32, Sendable {
            /// 66 (`EX_NOINPUT`): no relay data or backup where one was expected.
            case noInput = 66
            /// 73 (`EX_CANTCREAT`): the target cannot be created, is not a directory or is not empty.
            case cannotCreate = 73
            /// 74 (`EX_IOERR`): copying, moving or checking the copy failed.
            case ioError = 74
        }

        /// Why it failed, as the exit status the command uses.
        public let status: Status
        /// One sentence saying what failed, with the path and the system's reason.
        public let description: String
        /// The process exit status (`status.rawValue`).
        public var exitCode: Int32 { status.rawValue }

        /// A refusal; `description` is shown after `coords-relay <command>: error: `.
        public init(_ status: Status, _ description: String) {
            self.status = status
            self.description = description
        }
    }

    /// Copies the relay in `dataDirectory` into `target` (created 0700 with missing parents;
    /// if it exists it must be an empty directory). Safe while a relay serves `dataDirectory`.
    /// - Throws: ``Failure`` (66 when `dataDirectory` holds no relay, 73 when `target` is not
    ///   usable, 74 when copying or checking fails).
    /// - Parameter check: opens a copy and counts what it holds; the default runs in this
    ///   process. `coords-relay` passes one that runs in a child process, because LMDB may crash
    ///   (SIGBUS, abort) on a damaged file instead of returning an error.
    public static func backup(
        dataDirectory: String, to target: String,
        check: (String) throws -> Summary = RelayBackup.check
    ) throws -> Summary {
        guard isRegularFile(dataDirectory + "/data.mdb") else {
            throw Failure(.noInput, "no relay data in \(dataDirectory) (expected \(dataDirectory)/data.mdb)")
        }
        try prepareEmptyDirectory(target)
        do {
            let database = try Database.open(path: dataDirectory, schema: RelayTables.schema)
            defer { database.close() }
            try database.backup(toFile: target + "/data.mdb")
        } catch {
            throw Failure(.ioError, "could not copy \(dataDirectory): \(error)")
        }
        return try check(target)
    }

    /// Replaces the data of the relay in `dataDirectory` (created 0700 if missing) by the backup
    /// in `source`. The caller makes sure no relay serves `dataDirectory` (the relay's lock).
    /// The backup is copied next to the data and checked first; only then it replaces
    /// `data.mdb` in one rename, so a failed restore leaves the old data in place.
    /// - Throws: ``Failure`` (66 when `source` holds no backup, 73/74 when copying or checking fails).
    /// - Parameter check: as for ``backup(dataDirectory:to:check:)``.
    public static func restore(
        from source: String, dataDirectory: String,
        check: (String) throws -> Summary = RelayBackup.check
    ) throws -> Summary {
        guard isRegularFile(source + "/data.mdb") else {
            throw Failure(.noInput, "no backup in \(source) (expected \(source)/data.mdb)")
        }
        if mkdir(dataDirectory, 0o700) != 0, errno != EEXIST {
            throw Failure(.cannotCreate, "cannot create \(dataDirectory): \(String(cString: strerror(errno)))")
        }
        if let problem = privacyProblem(dataDirectory) { throw Failure(.cannotCreate, problem) }
        let staging = dataDirectory + "/.restore-\(getpid())"
        removeStaging(staging)
        // A fresh directory of our own: mkdir never follows a link planted under that name.
        guard mkdir(staging, 0o700) == 0 else {
            throw Failure(.cannotCreate, "cannot create \(staging): \(String(cString: strerror(errno)))")
        }
        defer { removeStaging(staging) }
        try copyFile(source + "/data.mdb", to: staging + "/data.mdb")
        let summary = try check(staging)
        guard rename(staging + "/data.mdb", dataDirectory + "/data.mdb") == 0 else {
            throw Failure(.ioError, "cannot move the restored data into \(dataDirectory): \(String(cString: strerror(errno)))")
        }
        unlink(dataDirectory + "/lock.mdb")  // readers of the old file; recreated at the next open
        syncDirectory(dataDirectory)
        return summary
    }

    /// Opens the copy in `directory`, counts what it holds, and removes the lock file the open made.
    /// - Throws: ``Failure`` (74) when it does not open as a relay store.
    public static func check(_ directory: String) throws -> Summary {
        defer { unlink(directory + "/lock.mdb") }
        do {
            let database = try Database.open(path: directory, schema: RelayTables.schema)
            defer { database.close() }
            let (blobs, messages) = try database.read { tx in
                (try tx.open(RelayTables.records).count(), try tx.open(RelayTables.mailboxIndex).count())
            }
            var info = stat()
            let bytes = stat(directory + "/data.mdb", &info) == 0 ? Int(clamping: info.st_size) : 0
            return Summary(blobs: blobs, messages: messages, bytes: bytes)
        } catch {
            throw Failure(.ioError, "the copy in \(directory) does not open as a relay store: \(error)")
        }
    }

    static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Creates `path` (and missing parents) 0700, or accepts an existing empty directory (made 0700).
    static func prepareEmptyDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw Failure(.cannotCreate, "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        guard let directory = opendir(path) else {
            throw Failure(.cannotCreate, "\(path) is not a directory")
        }
        var entries = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { entries += 1 }
        }
        closedir(directory)
        guard entries == 0 else { throw Failure(.cannotCreate, "\(path) is not empty; choose a new directory for the backup") }
        guard chmod(path, 0o700) == 0 else {
            throw Failure(.cannotCreate, "cannot make \(path) private (0700): \(String(cString: strerror(errno)))")
        }
    }

    /// Copies a file into a new 0600 file and syncs it.
    static func copyFile(_ source: String, to target: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure(.noInput, "cannot read \(source): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard output >= 0 else { throw Failure(.cannotCreate, "cannot create \(target): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            guard n >= 0 else { throw Failure(.ioError, "cannot read \(source): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            var written = 0
            while written < n {
                let w = chunk.withUnsafeBytes { write(output, $0.baseAddress?.advanced(by: written), n - written) }
                guard w > 0 else { throw Failure(.ioError, "cannot write \(target): \(String(cString: strerror(errno)))") }
                written += w
            }
        }
        guard fsync(output) == 0 else { throw Failure(.ioError, "cannot sync \(target): \(String(cString: strerror(errno)))") }
    }

    /// Removes a staging directory left by this process id, never following a link: a link (or
    /// anything but a directory of ours) under that name is unlinked itself, not what it points to.
    static func removeStaging(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else {
            unlink(path)
            return
        }
        unlink(path + "/data.mdb")
        unlink(path + "/lock.mdb")
        rmdir(path)
    }

    /// Why `directory` must not hold relay data, or nil: it is not a directory, belongs to
    /// another user, or other users may write in it (they could plant links or files there).
    public static func privacyProblem(_ directory: String) -> String? {
        var info = stat()
        guard stat(directory, &info) == 0 else { return "cannot use \(directory): \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(directory) is not a directory" }
        guard info.st_uid == geteuid() else {
            return "\(directory) belongs to user \(info.st_uid), not to this user (\(geteuid())); use a data directory of your own"
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o022 == 0 else {
            return "\(directory) is writable by other users (mode \(String(mode, radix: 8))); run chmod 700 \(directory)"
        }
        return nil
    }

    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
