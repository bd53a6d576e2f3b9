import CPlatform

/// Small POSIX file helpers shared by the keychain and the geocoding loader (the core avoids
/// Foundation's file APIs so the library stays lean when loaded by C or Python hosts).
enum Files {
    /// Why ``read(_:limit:)`` failed.
    enum ReadFailure: Error {
        /// `open` or `read` failed with `errno`.
        case system(operation: String, errno: Int32)
        /// The file is larger than the limit.
        case tooLarge(limit: Int)
    }

    /// Reads the whole file at `path`, or returns nil when it does not exist.
    /// - Throws: ``ReadFailure`` (never traps, whatever the file).
    static func read(_ path: String, limit: Int) throws(ReadFailure) -> [UInt8]? {
        let fd = coords_open(path, O_RDONLY | O_CLOEXEC, 0)
        if fd < 0 {
            if coords_errno() == ENOENT { return nil }
            throw .system(operation: "open \(path)", errno: coords_errno())
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { coords_read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if coords_errno() == EINTR { continue }
                throw .system(operation: "read \(path)", errno: coords_errno())
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else { throw .tooLarge(limit: limit) }
            bytes += chunk[0..<n]
        }
    }
}
