// The instruction-count gate's workload (scripts/bench-check.py, `make bench-check`): one hot
// operation, through CoordsCore ("ours") or the same libsodium/LMDB calls in C ("c"), run
// `iterations` times between callgrind markers after one warm-up run. Instruction counts repeat
// exactly on the same binary, so the ratio ours ÷ c is a regression gate that noise cannot move.
//
// The manager paths (prepare upload, process a fetch) are not here yet: their actors run on
// libdispatch worker threads, and Debian's valgrind 3.19 crashes when those start. They stay
// measured by `make bench` (wall clock) until the gate can follow them.
//
//   InstructionGate list                 the operations, one per line: name iterations budget
//   InstructionGate run NAME ours|c      set up, warm up, then the measured loop
import CBaseline
import CoordsCore
import GateMarkers

#if canImport(Glibc)
import Glibc
#endif

/// One gated operation: how many iterations the measured loop runs, the budget (most
/// instructions ours may spend per baseline instruction), and a setup returning both sides.
struct Operation {
    let name: String
    let iterations: Int
    let budget: Double
    let setup: () async throws -> (ours: () async throws -> Void, c: () throws -> Void)
}

func fail(_ message: String) -> Never {
    let line = Array("InstructionGate: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

/// Fixed inputs (a xorshift stream from a constant seed), so every run counts exactly the same
/// instructions: Ed25519 verification, for one, takes a data-dependent path.
nonisolated(unsafe) var stream: UInt64 = 0x9E37_79B9_7F4A_7C15
func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in
        stream ^= stream << 13
        stream ^= stream >> 7
        stream ^= stream << 17
        return UInt8(truncatingIfNeeded: stream)
    }
}

/// A signing key from the fixed stream.
func fixedKey() throws -> Ed25519SigningKey { try Ed25519SigningKey(seed: SecretBytes(copying: randomBytes(32))) }

/// Defeats dead-code elimination of results.
@inline(never) func keep<T>(_ value: T) { withExtendedLifetime(value) {} }

struct Identity {
    let key: Ed25519SigningKey
    let x25519: X25519PrivateKey
    let rawSecretKey: [UInt8]
    let rawX25519Scalar: [UInt8]

    init() throws {
        key = try fixedKey()
        x25519 = try X25519PrivateKey(ed25519: key)
        rawSecretKey = key.seed.copyBytes() + key.publicKey.rawRepresentation
        rawX25519Scalar = x25519.rawRepresentation.copyBytes()
    }
}

let location = WireLocation(latitudeE6: 47_376_900, longitudeE6: 8_541_700, altitude: 408, accuracy: 12, timestamp: 1_763_805_600_000)

/// Main-actor isolated like the rest of the workload: a hop to the global executor would start
/// libdispatch worker threads, which Debian's valgrind 3.19 cannot follow (it crashes).
@MainActor func blobSeal(_ n: Int, converting: Bool) -> Operation {
    Operation(name: "blob-seal-\(n)-\(converting ? "converting" : "cached")", iterations: n >= 64 ? 2 : 10, budget: 1.05) {
        let edKeys = try (0..<n).map { _ in try fixedKey().publicKey }
        let xKeys = try edKeys.map { try X25519PublicKey(ed25519: $0) }
        let raw = converting ? edKeys.flatMap(\.rawRepresentation) : xKeys.flatMap(\.rawRepresentation)
        let size = LocationBlob.byteCount(forEntryCount: LocationBlob.paddedEntryCount(forRecipientCount: n))
        let plaintext = location.bytes
        var out = [UInt8](repeating: 0, count: size)
        return (
            ours: { keep(converting ? try LocationBlob.seal(location, for: edKeys) : try LocationBlob.seal(location, for: xKeys)) },
            c: { keep(cb_blob_seal(plaintext, raw, n, converting ? 1 : 0, &out)) }
        )
    }
}

let operations: [Operation] = [
    Operation(name: "ed25519-sign", iterations: 20, budget: 1.10) {
        let alice = try Identity()
        let message = randomBytes(64)
        var out = [UInt8](repeating: 0, count: 64)
        return (ours: { keep(alice.key.signature(for: message)) }, c: { cb_sign(alice.rawSecretKey, message, 64, &out) })
    },
    Operation(name: "ed25519-verify", iterations: 20, budget: 1.10) {
        let alice = try Identity()
        let message = randomBytes(64)
        let signature = alice.key.signature(for: message)
        let raw = alice.key.publicKey.rawRepresentation
        return (
            ours: { keep(alice.key.publicKey.isValidSignature(signature, for: message)) }, c: { keep(cb_verify(raw, message, 64, signature)) }
        )
    },
    Operation(name: "x25519", iterations: 20, budget: 1.10) {
        let alice = try Identity()
        let bob = try X25519PublicKey(ed25519: try fixedKey().publicKey)
        let rawBob = bob.rawRepresentation
        var out = [UInt8](repeating: 0, count: 32)
        return (ours: { keep(try alice.x25519.sharedSecret(with: bob)) }, c: { keep(cb_scalarmult(&out, alice.rawX25519Scalar, rawBob)) })
    },
    blobSeal(1, converting: false), blobSeal(8, converting: false), blobSeal(64, converting: false),
    blobSeal(1, converting: true), blobSeal(8, converting: true), blobSeal(64, converting: true),
    Operation(name: "blob-open-8", iterations: 20, budget: 1.05) {
        let reader = try Identity()
        let others = try (0..<7).map { _ in try fixedKey().publicKey }
        let blob = try LocationBlob.seal(location, for: others + [reader.key.publicKey])  // own entry last
        var out = [UInt8](repeating: 0, count: 20)
        return (
            ours: { keep(try LocationBlob.open(blob, with: reader.x25519)) },
            c: { keep(cb_blob_open(reader.rawX25519Scalar, blob, blob.count, &out)) }
        )
    },
    Operation(name: "envelope-seal-1k", iterations: 10, budget: 1.10) {
        let (alice, bob) = (try Identity(), try Identity())
        let payload = randomBytes(1024)
        let created: UInt64 = 1_795_341_600
        let id = "3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a60"
        var b64 = [CChar](repeating: 0, count: 2048)
        var signature = [CChar](repeating: 0, count: 89)
        let bobRaw = bob.key.publicKey.rawRepresentation
        return (
            ours: { keep(try Envelope.seal(payload, id: id, from: alice.key, to: bob.key.publicKey, createdAt: created, expiresAt: created + 86_400)) },
            c: { keep(cb_envelope_seal(alice.rawSecretKey, bobRaw, id, payload, payload.count, &b64, b64.count, &signature)) }
        )
    },
    Operation(name: "envelope-open-1k", iterations: 10, budget: 1.10) {
        let (alice, bob) = (try Identity(), try Identity())
        let created: UInt64 = 1_795_341_600
        let id = "3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a60"
        let envelope = try Envelope.seal(randomBytes(1024), id: id, from: alice.key, to: bob.key.publicKey, createdAt: created, expiresAt: created + 86_400)
        let aliceRaw = alice.key.publicKey.rawRepresentation
        var out = [UInt8](repeating: 0, count: 2048)
        return (
            ours: { keep(try envelope.open(as: bob.key, from: alice.key.publicKey, now: created + 60)) },
            c: { keep(cb_envelope_open(bob.rawSecretKey, aliceRaw, id, envelope.sealedPayloadBase64, envelope.signatureBase64, &out, out.count)) }
        )
    },
    Operation(name: "store-put-one-transaction", iterations: 200, budget: 2.5) {
        let (db, raw) = try stores()
        let keys = try (0..<2_000).map { _ in try Bytes32(randomBytes(32)) }
        let rawKeys = keys.flatMap(\.bytes)
        let value = randomBytes(200)
        let next = Counter()
        let rawNext = Counter()
        return (
            ours: { try db.write { tx in try tx.open(storeTable).put(keys[next.take() % keys.count], value) } },
            c: {
                let i = rawNext.take() % keys.count
                keep(rawKeys.withUnsafeBufferPointer { cb_lmdb_put_per_txn(raw, $0.baseAddress.map { $0 + i * 32 }, 1, value, value.count) })
            }
        )
    },
    storeGet(borrowing: true), storeGet(borrowing: false)
]

/// 1,000 random gets of 200-byte values in one read transaction: typed (a fresh [UInt8] each) or
/// borrowing (``TableHandle/withValue(_:_:)``: the mapped bytes, no copy), against LMDB in C
/// copying each value into a buffer.
@MainActor func storeGet(borrowing: Bool) -> Operation {
    Operation(name: borrowing ? "store-get-1000-borrowing" : "store-get-1000", iterations: 1, budget: borrowing ? 1.3 : 1.9) {
        let (db, raw) = try stores()
        let keys = try (0..<1_000).map { _ in try Bytes32(randomBytes(32)) }
        let rawKeys = keys.flatMap(\.bytes)
        let value = randomBytes(200)
        try db.write { tx in
            let table = try tx.open(storeTable)
            for key in keys { try table.put(key, value) }
        }
        keep(cb_lmdb_put_one_txn(raw, rawKeys, keys.count, value, value.count))
        return (
            ours: {
                keep(
                    try db.read { tx in
                        let table = try tx.open(storeTable)
                        var total = 0
                        if borrowing {
                            for key in keys { total += try table.withValue(key) { $0.count } ?? 0 }
                        } else {
                            for key in keys { total += try table.get(key)?.count ?? 0 }
                        }
                        return total
                    })
            },
            c: { keep(cb_lmdb_get(raw, rawKeys, keys.count)) }
        )
    }
}

// MARK: Support

let storeTable = TableDefinition<Bytes32, [UInt8]>("gate")

final class Counter: @unchecked Sendable {
    private var value = 0
    func take() -> Int {
        value += 1
        return value
    }
}

func scratchDirectory() -> String {
    var template = Array("/tmp/coords-gate-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress, let made = mkdtemp(base) else { fail("cannot make a scratch directory") }
        return String(cString: made)
    }
}

func stores() throws -> (Database, OpaquePointer) {
    var options = Database.Options()
    options.durability = .noSync
    let db = try Database.open(path: scratchDirectory(), options: options, schema: Schema(version: 1, tables: [storeTable.erased]))
    guard let raw = cb_lmdb_open(scratchDirectory(), 1) else { fail("cannot open the raw LMDB store") }
    return (db, raw)
}

// MARK: Main

let arguments = CommandLine.arguments.dropFirst()
guard cb_init() >= 0 else { fail("libsodium did not initialise") }
switch arguments.first {
case "list":
    for operation in operations { print("\(operation.name) \(operation.iterations) \(operation.budget)") }
case "run":
    let rest = Array(arguments.dropFirst())
    guard rest.count == 2, let operation = operations.first(where: { $0.name == rest[0] }), rest[1] == "ours" || rest[1] == "c" else {
        fail("usage: InstructionGate run NAME ours|c (names: InstructionGate list)")
    }
    do {
        let (ours, c) = try await operation.setup()
        if rest[1] == "ours" {
            try await ours()  // warm-up: first-use costs (caches, lazy tables) stay out of the count
            gate_begin()
            for _ in 0..<operation.iterations { try await ours() }
            gate_end()
        } else {
            try c()
            gate_begin()
            for _ in 0..<operation.iterations { try c() }
            gate_end()
        }
    } catch {
        fail("\(operation.name): \(error)")
    }
default:
    fail("usage: InstructionGate list | run NAME ours|c")
}
