// The migration of a 1.0.0 store (plaintext, schema 3) into the sealed store (docs/STORE.md):
// its time and peak memory, for docs/PERFORMANCE.md. Two processes, so the peak is the
// migration's own (scripts/bench-migration.sh runs both):
//
//   MigrationBench create DIR N   writes a 1.0.0-shaped data directory with N messages (50 friends)
//   MigrationBench migrate DIR    opens it with CoordsApp (which migrates) and prints one JSON line:
//                                 {"messages", "migrate_ms", "peak_rss_kib", "plain_kib", "sealed_kib"}
import CoordsCore
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("MigrationBench: \(message)\n".utf8))
    exit(2)
}

func kib(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) / 1024
}

/// The process's peak resident set (VmHWM), KiB.
func peakRSS() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: MigrationBench create DIR N | migrate DIR") }
let directory = arguments[2]
let keychain = MemoryKeychain()

switch arguments[1] {
case "create":
    let count = arguments.count > 3 ? Int(arguments[3]) ?? 100_000 : 100_000
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var options = Database.Options()
    options.durability = .noSync
    let legacy = Schema(version: 3, tables: AppSchema.tables, migrations: [Migration(to: 2) { _ in }, Migration(to: 3) { _ in }])
    do {
        let db = try Database.open(path: directory + "/store", options: options, schema: legacy)
        let friends = try (0..<50).map { i -> Ed25519PublicKey in
            try Ed25519SigningKey(seed: SecretBytes(copying: [UInt8](repeating: UInt8(i + 1), count: 32))).publicKey
        }
        try db.write { tx in
            for (i, key) in friends.enumerated() {
                let x = try X25519PublicKey(ed25519: key).rawRepresentation
                try tx.open(Tables.friends).put(
                    key, FriendRecord(name: "Friend \(i)", server: "https://relay.example", addedAt: 1, x25519PublicKey: Base64.encode(x)))
            }
        }
        var sequence: UInt64 = 1
        while sequence <= UInt64(count) {
            try db.write { tx in
                let messages = try tx.open(Tables.messages)
                let ids = try tx.open(Tables.messageIDs)
                for _ in 0..<1_000 where sequence <= UInt64(count) {
                    let friend = friends[Int(sequence % 50)]
                    let id = UUID().uuidString.lowercased()
                    let json = """
                        {"id":"\(id)","kind":"text","outgoing":\(sequence % 2 == 0),"peer":"\(friend.base64URL)","sentAt":\(1_763_805_600_000 + sequence),\
                        "status":"received","storedAt":\(1_763_805_600_000 + sequence),"text":"message \(sequence): see you at the station at half past six"}
                        """
                    let record = try Array(json.utf8).withUnsafeBytes { try MessageRecord(storeBytes: $0) }
                    var key = friend.rawRepresentation
                    withUnsafeBytes(of: sequence.bigEndian) { key.append(contentsOf: $0) }
                    try messages.put(key, record)
                    try ids.put(id, key)
                    sequence += 1
                }
            }
        }
        try db.write { tx in try tx.open(Tables.settings).put(SettingKey.messageNextSequence, sequence) }
        db.close()
    } catch {
        fail("create: \(error)")
    }
case "migrate":
    let plain = kib(directory + "/store/data.mdb")
    var options = CoordsApp.Options(keychain: .custom(keychain))
    options.store.durability = .durable
    let started = DispatchTime.now().uptimeNanoseconds
    do {
        let app = try CoordsApp.open(directory: directory, options: options)
        let elapsed = (DispatchTime.now().uptimeNanoseconds - started) / 1_000_000
        let count = try app.messages.conversations().reduce(0) { $0 + $1.messageCount }
        app.close()
        print(
            "{\"messages\": \(count), \"migrate_ms\": \(elapsed), \"peak_rss_kib\": \(peakRSS()), \"plain_kib\": \(plain), "
                + "\"sealed_kib\": \(kib(directory + "/store/data.mdb"))}")
    } catch {
        fail("migrate: \(error)")
    }
default:
    fail("usage: MigrationBench create DIR N | migrate DIR")
}
