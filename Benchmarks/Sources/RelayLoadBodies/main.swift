// Writes signed request bodies for the relay load test, one JSON document per line:
//   uploads.txt  one upload per fresh key (no two bodies collide, so every PUT is a real store)
//   fetches.txt  {"ids": [50 of those keys]}
// Upload timestamps are set 280 s ahead, so the bodies stay within the relay's ±300 s window
// for about ten minutes after generation (long enough for the soak run).
// Usage: RelayLoadBodies <count> <output directory>
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

let arguments = CommandLine.arguments
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
