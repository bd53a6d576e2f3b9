// Test helper for StoreCrashSafetyTests: commits numbered transactions into a store as fast as
// it can and acknowledges each one on stdout ("ack N") only after `write` returned. The parent
// kills it with SIGKILL at a random moment and checks the reopened store.
//
// Usage: store-crash-child <directory> <durable|nosync|sealed|rekey>
//   sealed: the same commits into a store sealed under ``CrashSchema.dek``.
//   rekey:  opens a CoordsApp (file keychain, host key ``CrashSchema.hostKey``) holding
//           ``CrashSchema.friendCount`` friends and rekeys its store over and over ("ack N" after
//           each); the parent checks that the app still opens and reads every friend.
//   sessions <file>: opens the CoordsApp in <directory> (file keychain, passphrase
//           ``CrashSchema.sessionPassphrase``) and hands it each mailbox answer of <file> (a JSON
//           array of `{"packets": [...]}` objects) in turn, "ack N" after each was processed and
//           stored; forward-secret sessions advance in those transactions (PROTOCOL.md §10.10).
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

enum CrashSchema {
    static let records = TableDefinition<UInt64, [UInt8]>("records", keys: .visible)
    static let head = TableDefinition<String, UInt64>("head")
    static let schema = Schema(version: 1, tables: [records.erased, head.erased])
    /// Records written by transaction `n`: keys n*perTransaction ..< (n+1)*perTransaction.
    static let perTransaction: UInt64 = 8

    /// ~2 KiB per record so commits span several pages: the key (8 bytes, big-endian), then a
    /// fixed pattern. The parent rebuilds it the same way and compares with memcmp.
    static let pattern: [UInt8] = (0..<2040).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    static func value(for key: UInt64) -> [UInt8] {
        withUnsafeBytes(of: key.bigEndian) { Array($0) } + pattern
    }

    /// The DEK of the sealed mode.
    static let dek = [UInt8](repeating: 0x5a, count: 32)
    /// The file keychain's host key in the rekey mode.
    static let hostKey = [UInt8](repeating: 0x33, count: 32)
    /// Friends the rekey mode's app holds.
    static let friendCount = 40
    /// The file keychain's passphrase in the sessions mode.
    static let sessionPassphrase = "crash sessions"

    /// Options of the sealed mode's store.
    static func sealedOptions() throws -> Database.Options {
        var options = Database.Options()
        options.mapSize = 1 << 24
        options.sealer = try StoreSealer(dek: SecretBytes(copying: dek))
        return options
    }
}

/// Writes a line straight to a file descriptor (unbuffered, so an ack is out before the next commit).
func say(_ line: String, to fd: Int32 = 1) {
    let text = line + "\n"
    _ = text.withCString { write(fd, $0, strlen($0)) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    say("usage: store-crash-child <directory> [durable|nosync]", to: 2)
    exit(2)
}
let mode = arguments.count > 2 ? arguments[2] : "durable"
if mode == "sessions" {
    do {
        guard arguments.count > 3, let file = fopen(arguments[3], "rb") else { throw CrashChildError("no mailbox file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        fclose(file)
        guard let answers = try JSONValue.parse(bytes).arrayValue else { throw CrashChildError("the mailbox file is not a JSON array") }
        let app = try CoordsApp.open(directory: arguments[1], options: .init(keychain: .file(.passphrase(CrashSchema.sessionPassphrase))))
        say("ready 0")
        for (n, answer) in answers.enumerated() {
            _ = try await app.messages.processFetchResponse(answer.serialized())
            say("ack \(n)")
        }
        say("done")
        while true { sleep(1) }
    } catch {
        say("store-crash-child: \(error)", to: 2)
        exit(1)
    }
}
if mode == "rekey" {
    do {
        let app = try CoordsApp.open(directory: arguments[1], options: .init(keychain: .file(.key(SecretBytes(copying: CrashSchema.hostKey)))))
        say("ready 0")
        var n: UInt64 = 0
        while true {
            try app.rekeyStore()
            say("ack \(n)")
            n += 1
        }
    } catch {
        say("store-crash-child: \(error)", to: 2)
        exit(1)
    }
}
var options = Database.Options()
options.mapSize = 1 << 24
options.durability = mode == "nosync" ? .noSync : .durable
if mode == "sealed" {
    do { options = try CrashSchema.sealedOptions() } catch {
        say("store-crash-child: \(error)", to: 2)
        exit(1)
    }
}
do {
    let db = try Database.open(path: arguments[1], options: options, schema: CrashSchema.schema)
    var next = try db.read { tx in try tx.open(CrashSchema.head).get("next") } ?? 0
    say("ready \(next)")
    while true {
        let n = next
        try db.write { tx in
            let records = try tx.open(CrashSchema.records)
            for i in 0..<CrashSchema.perTransaction {
                let key = n * CrashSchema.perTransaction + i
                try records.put(key, CrashSchema.value(for: key))
            }
            try tx.open(CrashSchema.head).put("next", n + 1)
        }
        say("ack \(n)")
        next += 1
    }
} catch {
    say("store-crash-child: \(error)", to: 2)
    exit(1)
}

/// A failure of the child's own setup.
struct CrashChildError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
