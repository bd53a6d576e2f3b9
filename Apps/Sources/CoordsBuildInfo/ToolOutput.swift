#if canImport(Glibc)
import Glibc
#endif

/// Writes one line to standard error, unbuffered, so it is there even if the process dies next
/// (the servers' refusals before they start: coords-relay, coords-push-gateway).
public func printError(_ text: String) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
