import CoordsCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// A child process started with posix_spawn, its output in a file. Nothing here blocks Swift's
/// cooperative pool: waiting polls with `Task.sleep`, and `waitpid` runs on a dispatch thread.
final class SpawnedProcess: @unchecked Sendable {
    let pid: pid_t
    let logPath: String
    private let lock = NSLock()
    private var exitStatus: Int32?

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString).log").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw PostgresTestServerError(description: "cannot run \(executable): error \(spawned)") }
        self.pid = pid
    }

    /// Everything the process printed so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits (polling) until the output contains `text`; nil if the process exited or `timeout` passed.
    func waitForOutput(_ text: String, timeout: Duration = .seconds(30)) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let output = log
            if let range = output.range(of: text) { return String(output[range.upperBound...]) }
            if hasExited { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Whether the process has exited (reaps it without blocking).
    var hasExited: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return true }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
        return exitStatus != nil
    }

    /// Sends `signal` and waits for the exit (on a dispatch thread); the raw wait status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) async -> Int32 {
        if !hasExited { kill(pid, signal) }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in continuation.resume(returning: waitForExit()) }
        }
    }

    /// Blocks until the process exits; the raw wait status. Never call it on Swift's
    /// cooperative pool.
    func waitForExit() -> Int32 {
        lock.lock()
        if let exitStatus {
            lock.unlock()
            return exitStatus
        }
        lock.unlock()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }  // reaped meanwhile by hasExited
        exitStatus = status
        return status
    }

    deinit { unlink(logPath) }
}

/// One `coords-relay` process on a free loopback port.
final class RelayNode: Sendable {
    let process: SpawnedProcess
    let port: Int

    private init(process: SpawnedProcess, port: Int) {
        self.process = process
        self.port = port
    }

    /// Starts `coords-relay --port 0 <arguments>` (rate limits off unless the arguments set them)
    /// and waits until it listens.
    static func start(_ arguments: [String]) async throws -> RelayNode {
        guard let executable = RelayProcessTests.executable?.path else { throw MissingExecutable() }
        let process = try SpawnedProcess(
            executable,
            [
                "--port", "0", "--rate", "0", "--key-rate", "0", "--message-rate", "0",
                "--trust-forwarded-for"
            ] + arguments)
        guard let after = await process.waitForOutput("listening on 127.0.0.1:"), let port = Int(after.prefix { $0.isNumber }) else {
            let log = process.log
            await process.stop(SIGKILL)
            throw PostgresTestServerError(description: "coords-relay did not start: \(log)")
        }
        return RelayNode(process: process, port: port)
    }
}

/// Debian's nginx running deploy/nginx/coords-relay.conf, with its three addresses replaced by
/// the test's ports. Runs in the foreground (`daemon off`), everything in a temporary directory.
final class NginxProxy: Sendable {
    static let site = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("deploy/nginx/coords-relay.conf").path
    let process: SpawnedProcess
    let port: Int
    let directory: String

    private init(process: SpawnedProcess, port: Int, directory: String) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    static func start(upstreams: [Int]) async throws -> NginxProxy {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else {
            throw PostgresTestServerError(description: "nginx is not installed (make deps installs Debian's nginx)")
        }
        var lastError: (any Error)?
        for _ in 0..<8 {
            let port = Int.random(in: 20_000..<30_000)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var site = try String(contentsOfFile: site, encoding: .utf8)
            site = site.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
            let servers = upstreams.map { "    server 127.0.0.1:\($0) max_fails=3 fail_timeout=5s;" }.joined(separator: "\n")
            site = site.replacingOccurrences(
                of: "    server 127.0.0.1:8081 max_fails=3 fail_timeout=5s;\n    server 127.0.0.1:8082 max_fails=3 fail_timeout=5s;",
                with: servers)
            try site.write(toFile: directory + "/site.conf", atomically: true, encoding: .utf8)
            let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
                .map { "    \($0)_temp_path \(directory)/\($0);" }.joined(separator: "\n")
            let main = """
                daemon off;
                worker_processes 1;
                pid \(directory)/nginx.pid;
                error_log \(directory)/error.log warn;
                events { worker_connections 1024; }
                http {
                    access_log off;
                \(temporary)
                    include \(directory)/site.conf;
                }
                """
            try main.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let process = try SpawnedProcess("/usr/sbin/nginx", ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"])
            // Ready when the port answers.
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, !process.hasExited {
                if (try? await HTTPProbe.status(port: port, method: .get, path: "/healthz")) != nil {
                    return NginxProxy(process: process, port: port, directory: directory)
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            let log = process.log + ((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")
            await process.stop(SIGKILL)
            try? FileManager.default.removeItem(atPath: directory)
            lastError = PostgresTestServerError(description: "nginx did not start: \(log)")
        }
        throw lastError ?? PostgresTestServerError(description: "nginx did not start")
    }

    func stop() async {
        await process.stop(SIGQUIT)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One HTTP request on a fresh loopback connection.
enum HTTPProbe {
    static func request(port: Int, method: HTTPRequest.Method, path: String, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws
        -> (status: HTTPResponse.Status, json: JSONValue?)
    {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            let response = try await client.execute(TestClient.Request(path, method: method, authority: "127.0.0.1", headers: headers, body: body))
            let json = response.body.flatMap { try? JSONValue.parse(Array($0.readableBytesView)) }
            return (response.status, json)
        }
    }

    static func status(port: Int, method: HTTPRequest.Method, path: String, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws
        -> HTTPResponse.Status
    {
        try await request(port: port, method: method, path: path, headers: headers, body: body).status
    }
}
