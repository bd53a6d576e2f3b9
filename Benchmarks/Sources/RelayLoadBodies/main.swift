// Writes signed request bodies for the relay load test, one per line:
//   uploads.txt  one upload per fresh key (no two bodies collide, so every PUT is a real store)
//   fetches.txt  {"ids": [50 of those keys]}
// Upload timestamps are set 280 s ahead, so the bodies stay within the relay's ±300 s window
// for about ten minutes after generation (long enough for the soak run).
// Usage: RelayLoadBodies <count> <output directory>
//
// The growth runs (scripts/bench-relay.py) need keys they can come back to, so a bounded
// generator can fill a relay in chunks and later update or fetch the same keys:
//   RelayLoadBodies seeded <first> <count> <modulo> <ahead s> <dir>
//       uploads.txt: body i (0 ≤ i < count) uploads for key (first + i) mod modulo at
//       now + ahead + (first + i) / modulo seconds (so a key's later bodies are newer)
//   RelayLoadBodies fetches <keys> <count> <dir>
//       fetches.txt: count bodies of 50 ids drawn from keys 0 ..< keys
// Key n's seed is n (8 bytes, little-endian) followed by a constant.
//
// The mailbox growth runs (§7.3) write whole requests, one a line, as tab-separated
// `METHOD  path  X-Coords-Key  X-Coords-Timestamp  X-Coords-Signature  body` (empty fields
// are left out of the request; Benchmarks/relay.lua reads both kinds of line):
//   RelayLoadBodies envelopes <first> <count> <recipients> <dir>
//       envelopes.txt: POST /v1/relay/messages of envelope i (first ≤ i < first + count), id
//       envelopeID(i), to mailbox i mod recipients, from one of 16 senders, valid for 23 hours
//   RelayLoadBodies lists <recipients> <count> <dir>
//       lists.txt: count recipient-signed GET /v1/relay/messages?recipientID=…&limit=50, every
//       mailbox 0 ..< recipients once per round in random order (round r signed r seconds ago,
//       so no signature repeats: the relay accepts one once); count / recipients < 240
//   RelayLoadBodies acks <first> <count> <recipients> <dir>
//       acks.txt: the recipient-signed POST /v1/relay/messages/<id>/ack of envelopes first ..< first + count
// Mailbox n's key is seeded key 2^41 + n, sender s's key 2^42 + s. Signed headers carry the time
// of generation: send them within five minutes.
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Prints to standard error (file descriptor 2; the C `stderr` global is not concurrency-safe).
func fail(_ message: String) -> Never {
    var text = message + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    exit(1)
}

/// Key `index` of the seeded runs.
func seededKey(_ index: Int) throws -> Ed25519SigningKey {
    var seed = [UInt8](repeating: 0xC5, count: 32)
    withUnsafeBytes(of: UInt64(index).littleEndian) { for (offset, byte) in $0.enumerated() { seed[offset] = byte } }
    return try Ed25519SigningKey(seed: SecretBytes(copying: seed))
}

/// Writes `body` and a newline to `file`.
func emit(_ body: String, _ file: UnsafeMutablePointer<FILE>) { fputs(body + "\n", file) }

func openFile(_ directory: String, _ name: String) -> UnsafeMutablePointer<FILE> {
    guard let file = fopen(directory + "/" + name, "w") else { fail("cannot write \(directory)/\(name)") }
    return file
}

func nowSeconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return now.tv_sec
}

let arguments = CommandLine.arguments
if arguments.count == 7, arguments[1] == "seeded", let first = Int(arguments[2]), let count = Int(arguments[3]),
    let modulo = Int(arguments[4]), let ahead = Int(arguments[5]),
    (0...1 << 40).contains(first), (1...1 << 30).contains(count), modulo > 0, (0..<300).contains(ahead)  // first + i cannot overflow
{
    let file = openFile(arguments[6], "uploads.txt")
    let base = nowSeconds() + ahead
    do {
        for i in 0..<count {
            let index = (first + i) % modulo
            let timestamp = UInt64(base + (first + i) / modulo)
            let key = try seededKey(index)
            let wire = try Location(latitude: 47.3769, longitude: 8.5417, accuracy: 10, timestamp: timestamp * 1000).wire
            emit(RelayAPI.uploadBody(blob: try LocationBlob.seal(wire, for: [key.publicKey]), timestamp: timestamp, signer: key).serializedString, file)
        }
    } catch {
        fail("error: \(error)")
    }
    fclose(file)
    exit(0)
}
if arguments.count == 5, arguments[1] == "fetches", let keys = Int(arguments[2]), let count = Int(arguments[3]), keys >= 50,
    (1...1 << 30).contains(count)
{
    let file = openFile(arguments[4], "fetches.txt")
    var generator = SystemRandomNumberGenerator()
    do {
        for _ in 0..<count {
            let ids = try (0..<50).map { _ in JSONValue.string(try seededKey(Int.random(in: 0..<keys, using: &generator)).publicKey.base64URL) }
            emit(JSONValue.object(["ids": .array(ids)]).serializedString, file)
        }
    } catch {
        fail("error: \(error)")
    }
    fclose(file)
    exit(0)
}
/// The id of mailbox benchmark envelope `index`: a lowercase UUID v4 of fixed shape.
func envelopeID(_ index: Int) -> String {
    let digits = String(UInt64(index), radix: 16)
    return "c0a15000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits
}

/// A request line: method, path, the three §7.3 headers (or nothing) and a body, tab-separated.
/// The signed time is `age` seconds before the generator started: Ed25519 signatures are
/// deterministic, so two requests for one path signed at the same second would carry the same
/// (once-only) signature.
let startedAt = nowSeconds()
func requestLine(_ method: String, _ path: String, signer: Ed25519SigningKey? = nil, age: Int = 0, body: String = "") -> String {
    guard let signer else { return "\(method)\t\(path)\t\t\t\t\(body)" }
    let headers = MailboxAuth.headers(signer: signer, method: method, path: path, timestamp: UInt64(startedAt - age))
    let fields = ["X-Coords-Key", "X-Coords-Timestamp", "X-Coords-Signature"].map { headers[$0] ?? "" }
    return ([method, path] + fields + [body]).joined(separator: "\t")
}

/// Writes `count` lines made by `line(i)` for i in first ..< first + count to `dir/name`.
func writeLines(_ dir: String, _ name: String, first: Int, count: Int, _ line: (Int) throws -> String) -> Never {
    let file = openFile(dir, name)
    do {
        for i in first..<(first + count) { emit(try line(i), file) }
    } catch {
        fail("error: \(error)")
    }
    fclose(file)
    exit(0)
}

/// Keeps the keys of the mailboxes and senders, which every line needs again.
final class MailboxKeys {
    private var keys: [Int: Ed25519SigningKey] = [:]
    func recipient(_ n: Int) throws -> Ed25519SigningKey { try key(1 << 41 + n) }
    func sender(_ n: Int) throws -> Ed25519SigningKey { try key(1 << 42 + n % 16) }
    private func key(_ index: Int) throws -> Ed25519SigningKey {
        if let key = keys[index] { return key }
        let key = try seededKey(index)
        keys[index] = key
        return key
    }
}

let mailboxKeys = MailboxKeys()
if arguments.count == 6, arguments[1] == "envelopes" || arguments[1] == "acks", let first = Int(arguments[2]),
    let count = Int(arguments[3]), let recipients = Int(arguments[4]), (0...1 << 40).contains(first), (1...1 << 30).contains(count),
    (1...1 << 20).contains(recipients)
{
    if arguments[1] == "acks" {
        writeLines(arguments[5], "acks.txt", first: first, count: count) { i in
            requestLine("POST", "/v1/relay/messages/\(envelopeID(i))/ack", signer: try mailboxKeys.recipient(i % recipients))
        }
    }
    let created = UInt64(nowSeconds())
    writeLines(arguments[5], "envelopes.txt", first: first, count: count) { i in
        let id = envelopeID(i)
        let payload = MessagePayload(kind: "text", id: id, text: "benchmark message \(i)", sentAt: created * 1000).json
        let envelope = try Envelope.seal(
            payload, id: id, from: try mailboxKeys.sender(i), to: try mailboxKeys.recipient(i % recipients).publicKey, createdAt: created,
            expiresAt: created + 23 * 3600)
        return requestLine("POST", "/v1/relay/messages", body: envelope.json.serializedString)
    }
}
if arguments.count == 5, arguments[1] == "lists", let recipients = Int(arguments[2]), let count = Int(arguments[3]),
    (1...1 << 20).contains(recipients), (1...1 << 30).contains(count), count / recipients < 240  // signed times stay in the ±300 s window
{
    // Every mailbox once per round, in a fresh random order each round; round r signs r seconds
    // in the past, so no two lines share a signature.
    var generator = SystemRandomNumberGenerator()
    var order: [Int] = []
    writeLines(arguments[4], "lists.txt", first: 0, count: count) { i in
        if i % recipients == 0 { order = (0..<recipients).shuffled(using: &generator) }
        let key = try mailboxKeys.recipient(order[i % recipients])
        return requestLine("GET", "/v1/relay/messages?recipientID=\(PeerID(key.publicKey).hex)&limit=50", signer: key, age: i / recipients)
    }
}
guard arguments.count == 3, let count = Int(arguments[1]), count >= 50 else {
    fail("usage: RelayLoadBodies <count ≥ 50> <output directory>")
}
let directory = arguments[2]
let timestamp = UInt64(nowSeconds() + 280)
let uploads = openFile(directory, "uploads.txt")
let fetches = openFile(directory, "fetches.txt")
var ids: [String] = []
ids.reserveCapacity(count)
do {
    let location = try Location(latitude: 47.3769, longitude: 8.5417, accuracy: 10, timestamp: timestamp * 1000).wire
    for _ in 0..<count {
        let key = try Ed25519SigningKey.generate()
        let blob = try LocationBlob.seal(location, for: [key.publicKey])
        fputs(RelayAPI.uploadBody(blob: blob, timestamp: timestamp, signer: key).serializedString + "\n", uploads)
        ids.append(key.publicKey.base64URL)
    }
} catch {
    fail("error: \(error)")
}
var generator = SystemRandomNumberGenerator()
for _ in 0..<max(count / 10, 100) {
    let batch = (0..<50).map { _ in JSONValue.string(ids[Int.random(in: 0..<ids.count, using: &generator)]) }
    fputs(JSONValue.object(["ids": .array(batch)]).serializedString + "\n", fetches)
}
fclose(uploads)
fclose(fetches)
print("wrote \(count) uploads and \(max(count / 10, 100)) fetches to \(directory)")
