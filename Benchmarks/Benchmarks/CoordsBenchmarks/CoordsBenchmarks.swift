import Benchmark
import CBaseline
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

let benchmarks: @Sendable () -> Void = {
    _ = cb_init()
    cryptoBenchmarks()
    blobBenchmarks()
    storeBenchmarks()
    managerBenchmarks()
    geocodingBenchmarks()
    envelopeBenchmarks()
}

// MARK: Crypto primitives: our API vs the same libsodium call

func cryptoBenchmarks() {
    guard let alice = try? Identity(), let bob = try? Identity(), let bobX = try? X25519PublicKey(ed25519: bob.key.publicKey) else {
        return
    }
    let message = randomBytes(64)
    let signature = alice.key.signature(for: message)

    pair(
        "Ed25519 sign 64 B", ops: 100, ours: { blackHole(alice.key.signature(for: message)) },
        raw: {
            var out = [UInt8](repeating: 0, count: 64)
            cb_sign(alice.rawSecretKey, message, 64, &out)
            blackHole(out)
        })
    pair(
        "Ed25519 verify 64 B", ops: 100, ours: { blackHole(alice.key.publicKey.isValidSignature(signature, for: message)) },
        raw: {
            blackHole(cb_verify(alice.key.publicKey.rawRepresentation, message, 64, signature))
        })
    pair(
        "X25519 agreement", ops: 100, ours: { blackHole(try alice.x25519.sharedSecret(with: bobX)) },
        raw: {
            var out = [UInt8](repeating: 0, count: 32)
            blackHole(cb_scalarmult(&out, alice.rawX25519Scalar, bobX.rawRepresentation))
        })
    pair(
        "Ed25519→X25519 public key", ops: 100, ours: { blackHole(try X25519PublicKey(ed25519: bob.key.publicKey)) },
        raw: {
            var out = [UInt8](repeating: 0, count: 32)
            blackHole(cb_pk_to_curve(&out, bob.key.publicKey.rawRepresentation))
        })

    let key = (try? SecretBytes(randomCount: 32)) ?? SecretBytes(copying: [])
    let rawKey = key.copyBytes()
    let nonce = randomBytes(12)
    guard let sealNonce = try? AES256GCM.Nonce(nonce) else { return }
    for (label, size, ops) in [("20 B", 20, 10_000), ("1 KiB", 1024, 2000), ("64 KiB", 65_536, 40), ("1 MiB", 1 << 20, 3)] {
        let plaintext = randomBytes(size)
        let sealed = (try? AES256GCM.seal(plaintext, key: key, nonce: sealNonce)) ?? []
        pair(
            "AES-256-GCM seal \(label)", ops: ops, ours: { blackHole(try AES256GCM.seal(plaintext, key: key, nonce: sealNonce)) },
            raw: {
                var out = [UInt8](repeating: 0, count: size + 16)
                cb_aes_seal(rawKey, nonce, plaintext, size, &out)
                blackHole(out)
            })
        pair(
            "AES-256-GCM open \(label)", ops: ops, ours: { blackHole(try AES256GCM.open(sealed, key: key, nonce: sealNonce)) },
            raw: {
                var out = [UInt8](repeating: 0, count: size)
                blackHole(cb_aes_open(rawKey, nonce, sealed, size + 16, &out))
            })
    }
}

// MARK: Location blobs: LocationBlob vs the same libsodium call sequence in C

func blobBenchmarks() {
    let location = WireLocation(latitudeE6: 47_376_900, longitudeE6: 8_541_700, altitude: 408, accuracy: 12, timestamp: 1_763_805_600_000)
    let plaintext = location.bytes
    for (n, ops) in [(1, 50), (8, 20), (64, 4), (256, 1)] {
        guard let reader = try? Identity(), let others = try? (0..<(n - 1)).map({ _ in try Identity() }) else { return }
        // The reader's entry is last: opening tries every entry first (the worst case).
        let edKeys = others.map(\.key.publicKey) + [reader.key.publicKey]
        let xKeys = edKeys.compactMap { try? X25519PublicKey(ed25519: $0) }
        let rawX = xKeys.flatMap(\.rawRepresentation)
        let rawEd = edKeys.flatMap(\.rawRepresentation)
        let size = LocationBlob.byteCount(forEntryCount: LocationBlob.paddedEntryCount(forRecipientCount: n))
        let blob = (try? LocationBlob.seal(location, for: xKeys)) ?? []

        pair(
            "Blob seal N=\(n) cached keys", ops: ops, heavy: n >= 64, ours: { blackHole(try LocationBlob.seal(location, for: xKeys)) },
            raw: {
                var out = [UInt8](repeating: 0, count: size)
                blackHole(cb_blob_seal(plaintext, rawX, n, 0, &out))
            })
        pair(
            "Blob seal N=\(n) converting keys", ops: ops, heavy: n >= 64, ours: { blackHole(try LocationBlob.seal(location, for: edKeys)) },
            raw: {
                var out = [UInt8](repeating: 0, count: size)
                blackHole(cb_blob_seal(plaintext, rawEd, n, 1, &out))
            })
        pair(
            "Blob open N=\(n) own entry last", ops: ops * 4, heavy: n >= 64, ours: { blackHole(try LocationBlob.open(blob, with: reader.x25519)) },
            raw: {
                var out = [UInt8](repeating: 0, count: 20)
                blackHole(cb_blob_open(reader.rawX25519Scalar, blob, blob.count, &out))
            })
    }
}

// MARK: Store: typed tables vs raw LMDB

let benchTable = TableDefinition<Bytes32, [UInt8]>("bench")

func storeBenchmarks() {
    let count = quick ? 20_000 : 100_000
    let keys = (0..<count).compactMap { _ in try? Bytes32(randomBytes(32)) }
    let rawKeys = keys.flatMap(\.bytes)
    let value = randomBytes(200)
    let shuffled = keys.shuffled()
    let rawShuffled = shuffled.flatMap(\.bytes)
    let storeConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput], warmupIterations: 0,
        maxDuration: .seconds(quick ? 1 : 6), maxIterations: quick ? 2 : 8)

    func ourDatabase(_ path: String, durability: Database.Durability) -> Database? {
        var options = Database.Options()
        options.mapSize = 1 << 32
        options.durability = durability
        return try? Database.open(path: path, options: options, schema: Schema(version: 1, tables: [benchTable.erased]))
    }

    Benchmark("Store insert one transaction ×\(count) [ours]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("ours")
        defer { removeDirectory(path) }
        guard let db = ourDatabase(path, durability: .durable) else { return }
        defer { db.close() }
        benchmark.startMeasurement()
        try db.write { tx in
            let table = try tx.open(benchTable)
            for key in keys { try table.put(key, value) }
        }
        benchmark.stopMeasurement()
    }
    Benchmark("Store insert one transaction ×\(count) [raw]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("raw")
        defer { removeDirectory(path) }
        guard let db = cb_lmdb_open(path, 0) else { return }
        defer { cb_lmdb_close(db) }
        benchmark.startMeasurement()
        blackHole(cb_lmdb_put_one_txn(db, rawKeys, count, value, value.count))
        benchmark.stopMeasurement()
    }

    for (durable, perTxn) in [(true, quick ? 100 : 500), (false, quick ? 2000 : 10_000)] {
        let label = durable ? "durable" : "no-sync"
        Benchmark("Store insert one transaction each, \(label) ×\(perTxn) [ours]", configuration: storeConfiguration) { benchmark in
            let path = temporaryDirectory("ours")
            defer { removeDirectory(path) }
            guard let db = ourDatabase(path, durability: durable ? .durable : .noSync) else { return }
            defer { db.close() }
            benchmark.startMeasurement()
            for key in keys.prefix(perTxn) { try db.write { tx in try tx.open(benchTable).put(key, value) } }
            benchmark.stopMeasurement()
        }
        Benchmark("Store insert one transaction each, \(label) ×\(perTxn) [raw]", configuration: storeConfiguration) { benchmark in
            let path = temporaryDirectory("raw")
            defer { removeDirectory(path) }
            guard let db = cb_lmdb_open(path, durable ? 0 : 1) else { return }
            defer { cb_lmdb_close(db) }
            benchmark.startMeasurement()
            blackHole(cb_lmdb_put_per_txn(db, rawKeys, perTxn, value, value.count))
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Store random get ×\(count) [ours]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("ours")
        defer { removeDirectory(path) }
        guard let db = ourDatabase(path, durability: .noSync) else { return }
        defer { db.close() }
        try db.write { tx in
            let table = try tx.open(benchTable)
            for key in keys { try table.put(key, value) }
        }
        benchmark.startMeasurement()
        let total = try db.read { tx in
            let table = try tx.open(benchTable)
            var total = 0
            for key in shuffled { total += try table.get(key)?.count ?? 0 }
            return total
        }
        benchmark.stopMeasurement()
        blackHole(total)
    }
    Benchmark("Store random get, borrowing ×\(count) [ours]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("ours")
        defer { removeDirectory(path) }
        guard let db = ourDatabase(path, durability: .noSync) else { return }
        defer { db.close() }
        try db.write { tx in
            let table = try tx.open(benchTable)
            for key in keys { try table.put(key, value) }
        }
        benchmark.startMeasurement()
        let total = try db.read { tx in
            let table = try tx.open(benchTable)
            var total = 0
            for key in shuffled { total += try table.withValue(key) { $0.count } ?? 0 }
            return total
        }
        benchmark.stopMeasurement()
        blackHole(total)
    }
    Benchmark("Store random get, borrowing ×\(count) [raw]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("raw")
        defer { removeDirectory(path) }
        guard let db = cb_lmdb_open(path, 1) else { return }
        defer { cb_lmdb_close(db) }
        _ = cb_lmdb_put_one_txn(db, rawKeys, count, value, value.count)
        benchmark.startMeasurement()
        blackHole(cb_lmdb_get(db, rawShuffled, count))
        benchmark.stopMeasurement()
    }
    Benchmark("Store random get ×\(count) [raw]", configuration: storeConfiguration) { benchmark in
        let path = temporaryDirectory("raw")
        defer { removeDirectory(path) }
        guard let db = cb_lmdb_open(path, 1) else { return }
        defer { cb_lmdb_close(db) }
        _ = cb_lmdb_put_one_txn(db, rawKeys, count, value, value.count)
        benchmark.startMeasurement()
        blackHole(cb_lmdb_get(db, rawShuffled, count))
        benchmark.stopMeasurement()
    }
}

// MARK: Managers, end to end (store reads and writes included)

func managerBenchmarks() {
    for friends in [8, 64] {
        Benchmark("Manager prepare upload \(friends) friends ×20 [ours]", configuration: configuration(heavy: true)) { benchmark in
            let path = temporaryDirectory("app")
            defer { removeTree(path) }
            guard let app = try? openApp(path) else { return }
            defer { app.close() }
            _ = try await app.wallet.createIdentity(name: "Bench", server: "https://relay.example")
            for _ in 0..<friends {
                _ = try await app.friends.add(id: Ed25519SigningKey.generate().publicKey.base64URL, server: "https://relay.example", name: "f")
            }
            var timestamp = UInt64(1_763_805_600_000)
            benchmark.startMeasurement()
            for _ in 0..<20 {
                timestamp += 1
                blackHole(try await app.location.prepareUpload(try Location(latitude: 47.3769, longitude: 8.5417, timestamp: timestamp)))
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Manager process fetch response of 50 ×10 [ours]", configuration: configuration(heavy: true)) { benchmark in
        let path = temporaryDirectory("app")
        defer { removeTree(path) }
        guard let app = try? openApp(path) else { return }
        defer { app.close() }
        _ = try await app.wallet.createIdentity(name: "Bench", server: "https://relay.example")
        let me = try app.wallet.publicKey()
        var response = JSONObject()
        for i in 0..<50 {
            let friend = try Ed25519SigningKey.generate()
            _ = try await app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "f\(i)")
            let blob = try LocationBlob.seal(try Location(latitude: 1, longitude: 2, timestamp: 5).wire, for: [friend.publicKey, me])
            let body = RelayAPI.uploadBody(blob: blob, timestamp: 1_763_805_600, signer: friend).objectValue
            response[friend.publicKey.base64URL] = .object([
                "blob": body?["blob"] ?? .null, "updated": .integer(UInt64(1_763_805_600)),
                "signature": body?["signature"] ?? .null, "timestamp": .integer(UInt64(1_763_805_600))
            ])
        }
        let bytes = JSONValue.object(response).serialized()
        benchmark.startMeasurement()
        for _ in 0..<10 { blackHole(try await app.location.processFetchResponse(bytes)) }
        benchmark.stopMeasurement()
    }
}

func openApp(_ path: String) throws -> CoordsApp {
    var options = CoordsApp.Options(keychain: .custom(MemoryKeychain()))
    options.store.durability = .noSync
    return try CoordsApp.open(directory: path, options: options)
}

func removeTree(_ path: String) {
    removeDirectory(path + "/store")
    rmdir(path)
}

// MARK: Offline geocoding: the k-d index vs scoring every place (the reference algorithm)

func geocodingBenchmarks() {
    var sets: [(label: String, index: PlaceIndex, loadSeconds: Double)] = []
    let bundledStart = monotonicSeconds()
    if let bundled = try? PlaceIndex.bundled() {  // first use in this process: this is the load
        sets.append(("15000 set", bundled, monotonicSeconds() - bundledStart))
    }
    if let path = environmentValue("COORDS_PLACES_1000") {
        let start = monotonicSeconds()
        if let large = try? PlaceIndex(contentsOfFile: path) { sets.append(("1000 set", large, monotonicSeconds() - start)) }
    }
    // Query points: half uniform on the sphere (mostly ocean), half near real places.
    var rng = SystemRandomNumberGenerator()
    var points: [(Double, Double)] = []
    for i in 0..<1024 {
        if i % 2 == 0 {
            points.append((asin(Double.random(in: -1...1, using: &rng)) * 180 / .pi, Double.random(in: -180...180, using: &rng)))
        } else {
            points.append((Double.random(in: 25...60, using: &rng), Double.random(in: -120...140, using: &rng)))
        }
    }
    var memory: [String: Any] = [:]
    for set in sets {
        memory[set.label] = ["places": set.index.count, "bytes": set.index.memoryByteCount, "load_ms": set.loadSeconds * 1000]
        let index = set.index
        Benchmark("Geocode nearest, \(set.label) ×1024 [ours]", configuration: configuration(heavy: true)) { _ in
            for (latitude, longitude) in points { blackHole(try index.nearestPlace(latitude: latitude, longitude: longitude)) }
        }
        let scanned = set.label == "15000 set" ? 64 : 16
        Benchmark("Geocode nearest, \(set.label) ×\(scanned) [raw]", configuration: configuration(heavy: true)) { _ in
            for (latitude, longitude) in points.prefix(scanned) {
                blackHole(try index.nearestPlaceByScanning(latitude: latitude, longitude: longitude))
            }
        }
    }
    writeSideResult("geocoding.json", memory)
}

// MARK: Sealed messages: Envelope v2 vs the same libsodium sequence in C

func envelopeBenchmarks() {
    guard let alice = try? Identity(), let bob = try? Identity() else { return }
    let payload = randomBytes(1024)
    let created: UInt64 = 1_795_341_600  // 2026-11-22T10:00:00Z, the C baseline's fixed header times
    let id = "3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a60"
    guard let envelope = try? Envelope.seal(payload, id: id, from: alice.key, to: bob.key.publicKey, createdAt: created, expiresAt: created + 86_400)
    else { return }
    pair(
        "Envelope seal 1 KiB", ops: 20,
        ours: {
            blackHole(try Envelope.seal(payload, id: id, from: alice.key, to: bob.key.publicKey, createdAt: created, expiresAt: created + 86_400))
        },
        raw: {
            var b64 = [CChar](repeating: 0, count: 2048)
            var signature = [CChar](repeating: 0, count: 89)
            blackHole(cb_envelope_seal(alice.rawSecretKey, bob.key.publicKey.rawRepresentation, id, payload, payload.count, &b64, b64.count, &signature))
        })
    pair(
        "Envelope open 1 KiB", ops: 20,
        ours: {
            blackHole(try envelope.open(as: bob.key, from: alice.key.publicKey, now: created + 60))
        },
        raw: {
            var out = [UInt8](repeating: 0, count: 2048)
            blackHole(
                cb_envelope_open(
                    bob.rawSecretKey, alice.key.publicKey.rawRepresentation, id, envelope.sealedPayloadBase64,
                    envelope.signatureBase64, &out, out.count))
        })
}
