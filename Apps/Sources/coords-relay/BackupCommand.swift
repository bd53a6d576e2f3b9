import ArgumentParser
import CoordsBuildInfo
import CoordsRelay

#if canImport(Glibc)
import Glibc
#endif

/// `coords-relay backup DIR`: a consistent hot copy of an LMDB relay (docs/RELAY.md, "Backups").
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the LMDB relay's data into a new directory while it serves.",
        discussion: """
            Writes DIR/data.mdb from one consistent snapshot (compacted; DIR 0700, the file 0600), \
            then opens the copy to check it and prints what it holds. The relay may keep serving. \
            Exit status 0 when done, 66 when --data-dir holds no relay, 73 when DIR exists and is \
            not empty, 74 when copying fails. On PostgreSQL use pg_dump instead.
            """)

    @Option(name: .customLong("data-dir"), help: "The relay's data directory [COORDS_DATA_DIR].")
    var dataDirectory: String = defaultDataDirectory()

    @Argument(help: "The backup directory to create (missing parents are created too).")
    var target: String

    func run() async throws {
        try reportingBackupFailure("backup") {
            let summary = try RelayBackup.backup(dataDirectory: dataDirectory, to: target, check: checkInChildProcess)
            return "backed up \(dataDirectory) to \(target): \(summary.blobs) blobs, \(summary.messages) messages, \(summary.bytes) bytes"
        }
    }
}

/// `coords-relay restore DIR`: puts a backup in place of a stopped relay's data.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replace a stopped relay's data by a backup.",
        discussion: """
            Stop the relay first: restore takes the data directory's lock and refuses while a relay \
            serves it (exit 75). The backup is copied next to the data and checked before it \
            replaces data.mdb in one rename, so a failed restore leaves the old data. Exit status 0 \
            when done, 66 when DIR holds no backup, 73/74 when copying fails.
            """)

    @Option(name: .customLong("data-dir"), help: "The relay's data directory [COORDS_DATA_DIR].")
    var dataDirectory: String = defaultDataDirectory()

    @Argument(help: "A directory written by `coords-relay backup`.")
    var source: String

    func run() async throws {
        if let problem = DataDirectoryLock.acquire(dataDirectory) {
            printError("coords-relay restore: error: \(problem)")
            throw ExitCode(75)
        }
        try reportingBackupFailure("restore") {
            let summary = try RelayBackup.restore(from: source, dataDirectory: dataDirectory, check: checkInChildProcess)
            return "restored \(source) into \(dataDirectory): \(summary.blobs) blobs, \(summary.messages) messages"
        }
    }
}

/// Prints what `body` returns; a ``RelayBackup/Failure`` becomes one line on standard error
/// (`coords-relay <command>: error: …`) and the failure's exit status.
func reportingBackupFailure(_ command: String, _ body: () throws -> String) throws {
    do {
        print(try body())
    } catch let failure as RelayBackup.Failure {
        printError("coords-relay \(command): error: \(failure.description)")
        throw ExitCode(failure.exitCode)
    }
}

/// `coords-relay check-store DIR` (hidden): opens the relay store copy in DIR and prints
/// `blobs messages bytes`. Backup and restore run it as a child process, so a damaged file that
/// makes LMDB crash (SIGBUS on a truncated map, an assertion) fails the check instead of the tool.
struct CheckStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-store", abstract: "Check a relay store copy.",
        shouldDisplay: false)

    @Argument var directory: String

    func run() throws {
        try reportingBackupFailure("check-store") {
            let summary = try RelayBackup.check(directory)
            return "\(summary.blobs) \(summary.messages) \(summary.bytes)"
        }
    }
}

/// Runs `check-store` on `directory` in a child process (this executable, /proc/self/exe).
/// - Throws: ``RelayBackup/Failure`` (74) when the child fails, crashes or prints nonsense.
func checkInChildProcess(_ directory: String) throws -> RelayBackup.Summary {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw RelayBackup.Failure(.ioError, "cannot check \(directory): no pipe") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
    let arguments = ["coords-relay", "check-store", directory]
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nil, argv, environ)
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    guard spawned == 0 else {
        throw RelayBackup.Failure(.ioError, "cannot check \(directory): \(String(cString: strerror(spawned)))")
    }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 256)
    while output.count < 4096 {
        let n = chunk.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
        if n <= 0 { break }
        output += chunk[0..<n]
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signal = status & 0x7f
    let numbers = String(decoding: output, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
    guard signal == 0, (status >> 8) & 0xff == 0, numbers.count == 3 else {
        let how = signal != 0 ? "opening it crashed LMDB (signal \(signal))" : "it does not open as a relay store"
        throw RelayBackup.Failure(.ioError, "the copy in \(directory) is damaged: \(how)")
    }
    return RelayBackup.Summary(blobs: numbers[0], messages: numbers[1], bytes: numbers[2])
}
