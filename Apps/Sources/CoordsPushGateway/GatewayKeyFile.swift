import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// The gateway's X25519 key pair on disk: one line, the 32-byte private key in base64url
/// (43 characters), in a file only its owner may read (0600). The public key is what the
/// publisher builds into the app (`coords-push-gateway public-key`).
public enum GatewayKeyFile {
    /// Creates `path` (refused if it exists) with a new key, mode 0600, and returns the key.
    /// - Throws: ``GatewaySetupError`` when the file exists or cannot be written.
    public static func generate(at path: String) throws -> X25519PrivateKey {
        let secret = try SecretBytes(randomCount: 32)
        let key = try X25519PrivateKey(rawRepresentation: secret)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw GatewaySetupError(
                errno == EEXIST
                    ? "\(path) exists already: a gateway key is never overwritten (move it away first)"
                    : "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var line = Array(secret.withUnsafeBytes { Base64.encode($0) }.utf8) + [0x0A]
        defer { wipe(&line) }
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count, fsync(fd) == 0 else {
            unlink(path)
            throw GatewaySetupError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return key
    }

    /// Reads the key in `path`.
    /// - Throws: ``GatewaySetupError`` when the file is missing, a link, readable by others
    ///   (group or world: anyone who reads it can open every token), or not one key.
    public static func load(_ path: String) throws -> X25519PrivateKey {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw GatewaySetupError("cannot open the gateway key \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw GatewaySetupError("\(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw GatewaySetupError("\(path) can be read by other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
        }
        var buffer = [UInt8](repeating: 0, count: 128)
        defer { wipe(&buffer) }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0, count < buffer.count else { throw GatewaySetupError("\(path) is not a gateway key (one line of 43 characters)") }
        var end = count
        while end > 0, buffer[end - 1] == 0x0A || buffer[end - 1] == 0x0D || buffer[end - 1] == 0x20 { end -= 1 }
        // Not base64url, or not 32 bytes: one error naming the file and what a key file holds.
        guard var raw = try? buffer.withUnsafeBytes({ try Base64.decode(UnsafeRawBufferPointer(rebasing: $0[0..<end]), field: "key") }),
            raw.count == 32
        else { throw GatewaySetupError("\(path) is not a gateway key (one line of 43 characters)") }
        defer { wipe(&raw) }
        return try X25519PrivateKey(rawRepresentation: SecretBytes(copying: raw))
    }
}

/// Overwrites `bytes` with zeros (the copies a key passes through on its way into SecretBytes).
private func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        _ = memset(base, 0, buffer.count)
    }
}
