import CoordsCore
import Foundation
import Logging
import Synchronization
import Testing

@testable import CoordsRelay

/// The three relay stores the parametrised suites run against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, lmdb, postgres
    var testDescription: String { rawValue }
}

/// Fresh stores for tests: a new memory store, a new LMDB directory, or a new database on the
/// test process's PostgreSQL server (``PostgresTestServer/shared()``).
enum StoreUnderTest {
    private static let directories = Mutex<[String]>([])

    static func store(_ kind: StoreKind) async throws -> any RelayStore {
        try await reopenable(kind)()
    }

    /// A function that opens the same store each time it is called (after the previous one was
    /// closed): the same LMDB directory or the same PostgreSQL database. For memory, a new store.
    static func reopenable(_ kind: StoreKind) async throws -> @Sendable () async throws -> any RelayStore {
        switch kind {
        case .memory:
            return { MemoryRelayStore() }
        case .lmdb:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)").path
            directories.withLock { $0.append(directory) }
            return { try LMDBRelayStore(directory: directory, durability: .noSync) }
        case .postgres:
            let location = try await PostgresTestServer.shared().freshDatabase()
            // A generous deadline: the suites run in parallel with one PostgreSQL server on 2
            // cores, where a statement can wait seconds for a core. The 503 on a slow database is
            // tested with its own short deadline (PostgresStoreTests).
            return { try await PostgresRelayStore(location: location, poolSize: 4, operationTimeout: .seconds(30), logger: quietLogger) }
        }
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "test.postgres")
        logger.logLevel = .critical
        return logger
    }

    /// Removes the LMDB directories made so far (the stores must be closed).
    static func removeDirectories() {
        for directory in directories.withLock({ list in
            defer { list = [] }
            return list
        }) {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}

/// Runs `body`, then `cleanup`, whether `body` returned or threw (an async `defer`, which Swift
/// does not have): the servers, clusters and pools a test starts never outlive it.
func withCleanup<Value>(_ body: () async throws -> Value, cleanup: () async -> Void) async throws -> Value {
    let value: Value
    do {
        value = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return value
}

/// A real PostgreSQL server for one test suite (scripts/pg-test-server.sh), started and stopped
/// explicitly by the suite. Blocking subprocess calls run on dispatch threads, never on Swift's
/// cooperative pool (on 2 cores the relays under test would stall behind them).
final class PostgresTestServer: Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/pg-test-server.sh").path
    let directory: String
    let port: Int

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    private static let sharedServer = Mutex<Task<PostgresTestServer, any Error>?>(nil)

    /// The server the parametrised suites share, started on first use. It is never stopped by a
    /// test: the script's watchdog stops it and removes its files when this process exits.
    static func shared() async throws -> PostgresTestServer {
        let task = sharedServer.withLock { task in
            if let task { return task }
            let started = Task { try await start(watching: getpid()) }
            task = started
            return started
        }
        return try await task.value
    }

    /// Starts a new server on a free loopback port outside the ephemeral range (retried if busy);
    /// with `watching`, the script stops it when that process exits.
    static func start(watching: pid_t? = nil) async throws -> PostgresTestServer {
        var lastError: (any Error)?
        for _ in 0..<8 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-\(UUID().uuidString)").path
            let port = Int.random(in: 20_000..<30_000)
            do {
                _ = try await runOffPool(script, ["start", directory, String(port)] + (watching.map { [String($0)] } ?? []))
                return PostgresTestServer(directory: directory, port: port)
            } catch {
                lastError = error
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        throw lastError ?? PostgresTestServerError(description: "PostgreSQL did not start")
    }

    /// Stops the server and removes its files.
    func stop() async {
        _ = try? await Self.runOffPool(Self.script, ["kill", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The database URL with `password`.
    func url(database: String = "coords", password: String = "coords-test") -> String {
        "postgres://coords:\(password)@127.0.0.1:\(port)/\(database)"
    }

    /// A new empty database owned by the test role.
    func freshDatabase() async throws -> PostgresLocation {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await sql("CREATE DATABASE \(name)")
        return try PostgresLocation(url: url(database: name))
    }

    /// Runs one SQL statement as the test role in `database`.
    func sql(_ statement: String, database: String = "coords") async throws {
        _ = try await Self.runOffPool(
            "/usr/bin/env",
            [
                "PGPASSWORD=coords-test", "psql", "-h", "127.0.0.1", "-p", String(port), "-U", "coords",
                "-d", database, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", statement
            ])
    }

    /// The output of one SQL query, run as the test role in `database`.
    func query(_ statement: String, database: String = "coords") async throws -> String {
        try await Self.runOffPool(
            "/usr/bin/env",
            [
                "PGPASSWORD=coords-test", "psql", "-h", "127.0.0.1", "-p", String(port), "-U", "coords",
                "-d", database, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", statement
            ])
    }

    /// The script's `kill` (immediate stop) and `start` again on the same data and port.
    func control(_ command: String) async throws {
        if command == "start" {
            _ = try await Self.runOffPool(Self.script, ["start", directory, String(port)])
        } else {
            _ = try await Self.runOffPool(Self.script, [command, directory])
        }
    }

    static func runOffPool(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try run(executable, arguments, environment: environment) })
            }
        }
    }

    /// Runs a command to completion (``SpawnedProcess``: posix_spawn and waitpid; Foundation's
    /// Process can wait forever for a child that already exited when called off the main
    /// thread). Blocks: call it on a dispatch thread (``runOffPool(_:_:environment:)``).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let process = try SpawnedProcess(executable, arguments, environment: environment)
        let status = process.waitForExit()
        let output = process.log
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw PostgresTestServerError(description: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(output)")
        }
        return output
    }
}

struct PostgresTestServerError: Error, CustomStringConvertible {
    let description: String
}
