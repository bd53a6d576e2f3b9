import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Whether `path` is a directory with no entries.
func isEmptyDirectory(_ path: String) -> Bool {
    guard let directory = opendir(path) else { return false }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { return false }
    }
    return true
}

/// Removes a directory tree we created (the staging directory of `coords init`); never follows symlinks.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if (info.st_mode & S_IFMT) == S_IFDIR, let directory = opendir(path) {
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// Writes a file readable by its owner only (0600), also when it already existed with wider
/// permissions: the mode is set on the open descriptor before any byte is written.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    guard fchmod(fd, 0o600) == 0 else { throw CLIFailure("cannot make \(path) private (0600): \(String(cString: strerror(errno)))") }
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress?.advanced(by: written), bytes.count - written) }
        guard n > 0 else { throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
        written += n
    }
}

func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        if n == 0 { break }
        bytes += chunk[0..<n]
        guard bytes.count <= 16 << 20 else { throw CLIFailure("\(path) is larger than 16 MiB; not a backup") }
    }
    return bytes
}
