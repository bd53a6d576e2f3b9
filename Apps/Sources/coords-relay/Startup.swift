import ArgumentParser
import CoordsRelay
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Environment defaults of the options, strict: a variable that is set but does not parse
/// (`COORDS_PORT=abc`) is an error at validation, exactly like the same bad flag — never a
/// silent fall-back to the default.
enum Env {
    private static let problems = Mutex<[String]>([])

    private static func parsed<T>(_ name: String, _ fallback: T, _ what: String, _ parse: (String) -> T?) -> T {
        guard let text = environment(name) else { return fallback }
        if let value = parse(text) { return value }
        problems.withLock { $0.append("\(name)=\(text) is not \(what)") }
        return fallback
    }

    /// `name` as text (any value parses).
    static func string(_ name: String, _ fallback: String) -> String { environment(name) ?? fallback }

    /// `name` as a whole number.
    static func int(_ name: String, _ fallback: Int) -> Int { parsed(name, fallback, "a whole number") { Int($0) } }

    /// `name` as a non-negative whole number.
    static func uint64(_ name: String, _ fallback: UInt64) -> UInt64 {
        parsed(name, fallback, "a non-negative whole number") { UInt64($0) }
    }

    /// `name` as a finite number.
    static func double(_ name: String, _ fallback: Double) -> Double {
        parsed(name, fallback, "a number") { Double($0).flatMap { $0.isFinite ? $0 : nil } }
    }

    /// `name` as a switch: `1`/`true` on, `0`/`false`/empty off.
    static func flag(_ name: String) -> Bool {
        parsed(name, false, "1, true, 0 or false") { text in
            switch text.lowercased() {
            case "1", "true": return true
            case "0", "false", "": return false
            default: return nil
            }
        }
    }

    /// Throws a `ValidationError` naming every variable that did not parse.
    static func check() throws {
        // Option defaults may be evaluated more than once: each problem is named once.
        let found = problems.withLock { list in list.enumerated().filter { list.firstIndex(of: $0.element) == $0.offset }.map(\.element) }
        guard found.isEmpty else { throw ValidationError(found.joined(separator: "; ")) }
    }
}

/// Whether the relay could listen on `host:port` (checked before it says it is starting): nil
/// if it can, else one sentence (in use, not permitted, no such address). Port 0 always can.
func listenProblem(host: String, port: Int) -> String? {
    guard port != 0 else { return nil }
    var hints = addrinfo()
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var found: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
        return "cannot listen on \(host):\(port): no such address"
    }
    defer { freeaddrinfo(first) }
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let info = entry {
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        if fd >= 0 {
            var yes: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            let bound = bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            let error = errno
            close(fd)
            if bound != 0 {
                switch error {
                case EADDRINUSE: return "\(host):\(port) is already in use: another process listens there (stop it or choose another --port)"
                case EACCES: return "not permitted to listen on port \(port) (ports below 1024 need privileges; use a higher --port behind a proxy)"
                case EADDRNOTAVAIL: return "cannot listen on \(host): no interface of this machine has that address"
                default: return "cannot listen on \(host):\(port): \(String(cString: strerror(error)))"
                }
            }
        }
        entry = info.pointee.ai_next
    }
    return nil
}

/// An exclusive lock on an LMDB data directory (`relay.lock`, held until the process exits), so
/// a second relay on the same directory refuses to start instead of sharing it unnoticed.
/// (`coords-relay migrate` only reads and does not take it.)
enum DataDirectoryLock {
    /// Takes the lock; a sentence if another process holds it or the directory is unusable (not
    /// a directory, another user's, or writable by other users: anyone could plant files there).
    static func acquire(_ directory: String) -> String? {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            return "cannot create the data directory \(directory): \(String(cString: strerror(errno)))"
        }
        if let problem = RelayBackup.privacyProblem(directory) { return problem }
        let fd = open(directory + "/relay.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "cannot open \(directory)/relay.lock: \(String(cString: strerror(errno)))" }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            close(fd)
            if error == EWOULDBLOCK {
                return "another coords-relay is already serving \(directory) (it holds \(directory)/relay.lock); stop it or choose another --data-dir"
            }
            return "cannot lock \(directory)/relay.lock: \(String(cString: strerror(error)))"
        }
        return nil  // the descriptor stays open (and locked) for the life of the process
    }
}
