// Writes signed request bodies for the relay load test, one JSON document per line:
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
guard arguments.count == 3, let count = Int(arguments[1]), count >= 50 else {
    fail("usage: RelayLoadBodies <count ≥ 50> <output directory>")
}
let directory = arguments[2]
var now = timespec()
clock_gettime(CLOCK_REALTIME, &now)
let timestamp = UInt64(now.tv_sec) + 280

func open(_ name: String) -> UnsafeMutablePointer<FILE> {
    guard let file = fopen(directory + "/" + name, "w") else { fail("cannot write \(directory)/\(name)") }
    return file
}

let uploads = open("uploads.txt")
let fetches = open("fetches.txt")
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
