import BenchSupport
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
    clientGrowthBenchmark()
    geocodingBenchmarks()
    envelopeBenchmarks()
    sessionBenchmarks()
    groupBenchmarks()
    attachmentBenchmarks()
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
    let rawShuffled = keys.shuffled().flatMap(\.bytes)
    // Each side walks its own list of keys in memory order: C a contiguous buffer, ours keys
    // made one after another in that order (the same keys' buffers made in insertion order would
    // add a cache miss per key that the C side does not pay).
    let shuffled = stride(from: 0, to: rawShuffled.count, by: 32).compactMap { try? Bytes32(Array(rawShuffled[$0..<($0 + 32)])) }
    let storeConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput], warmupIterations: 0,
        maxDuration: .seconds(quick ? 1 : 6), maxIterations: quick ? 2 : 8)

    @Sendable func ourDatabase(_ path: String, durability: Database.Durability, sealed: Bool = false) -> Database? {
        var options = Database.Options()
        options.mapSize = 1 << 32
        options.durability = durability
        if sealed { options.sealer = try? StoreSealer(dek: SecretBytes(copying: sealKey)) }
        return try? Database.open(path: path, options: options, schema: Schema(version: 1, tables: [benchTable.erased]))
    }
    // The C side of the sealed rows seals under this key (ours derives its own subkeys from it).
    let sealKey = randomBytes(32)

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

    for borrowing in [false, true] {
        let label = borrowing ? "Store random get, borrowing" : "Store random get"
        Benchmark("\(label) ×\(count) [ours]", configuration: storeConfiguration) { benchmark in
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
                for key in shuffled {
                    total += borrowing ? try table.withValue(key) { $0.count } ?? 0 : try table.get(key)?.count ?? 0
                }
                return total
            }
            benchmark.stopMeasurement()
            blackHole(total)
        }
        Benchmark("\(label) ×\(count) [raw]", configuration: storeConfiguration) { benchmark in
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

    // Paired, interleaved ratios of the same operations on two stores filled alike: a batch is
    // every key once in random order, 1,000 gets per read transaction (each batch does the same
    // work, and it is long enough that a timer tick cannot dominate it), or 500 single-put
    // transactions without fsync.
    let perRead = 1_000
    @Sendable func filledStores(durable: Bool = false, sealed: Bool = false) throws -> (ours: Database, raw: SendableHandle, close: () -> Void) {
        let (oursPath, rawPath) = (temporaryDirectory("ours"), temporaryDirectory("raw"))
        guard let db = ourDatabase(oursPath, durability: durable ? .durable : .noSync, sealed: sealed), let raw = cb_lmdb_open(rawPath, durable ? 0 : 1)
        else {
            throw BenchmarkSetupError("cannot open the paired stores")
        }
        try db.write { tx in
            let table = try tx.open(benchTable)
            for key in keys { try table.put(key, value) }
        }
        if sealed {
            _ = cb_lmdb_put_sealed_one_txn(raw, rawKeys, count, value, value.count, sealKey)
        } else {
            _ = cb_lmdb_put_one_txn(raw, rawKeys, count, value, value.count)
        }
        // Every page touched once on both sides first: the mapped files' first-touch faults
        // would otherwise land in whichever batch reaches a page first.
        try db.read { tx in
            let table = try tx.open(benchTable)
            for key in shuffled { blackHole(try table.withValue(key) { $0.count }) }
        }
        blackHole(sealed ? cb_lmdb_get_sealed(raw, rawShuffled, count, sealKey) : cb_lmdb_get(raw, rawShuffled, count))
        let handle = SendableHandle(pointer: raw)
        return (
            db, handle,
            {
                db.close()
                cb_lmdb_close(handle.pointer)
                removeDirectory(oursPath)
                removeDirectory(rawPath)
            }
        )
    }
    // Sealed at rest (docs/STORE.md): ours hashes the key and opens the value into a wiped
    // buffer; the floor is LMDB plus one XChaCha20-Poly1305 open of the same value in C.
    for (borrowing, sealed) in [(false, false), (true, false), (true, true)] {
        let label = sealed ? "Store random get, borrowing, sealed" : borrowing ? "Store random get, borrowing" : "Store random get"
        pairedWithSetup(label, ops: count / perRead) {
            let (db, raw, close) = try filledStores(sealed: sealed)
            let (next, rawNext) = (Cursor(), Cursor())
            return (
                ours: {
                    let start = next.advance(by: perRead, wrappingAt: count)
                    blackHole(
                        try db.read { tx in
                            let table = try tx.open(benchTable)
                            var total = 0
                            for key in shuffled[start..<(start + perRead)] {
                                total += borrowing ? try table.withValue(key) { $0.count } ?? 0 : try table.get(key)?.count ?? 0
                            }
                            return total
                        })
                },
                raw: {
                    let start = rawNext.advance(by: perRead, wrappingAt: count)
                    blackHole(
                        rawShuffled.withUnsafeBufferPointer {
                            let keys = $0.baseAddress.map { $0 + start * 32 }
                            return sealed ? cb_lmdb_get_sealed(raw.pointer, keys, perRead, sealKey) : cb_lmdb_get(raw.pointer, keys, perRead)
                        })
                },
                close: close
            )
        }
    }
    // One durable transaction inserting the next 5,000 keys (empty stores at the start).
    pairedWithSetup("Store insert one transaction", ops: 1, heavy: true) {
        let (oursPath, rawPath) = (temporaryDirectory("ours"), temporaryDirectory("raw"))
        guard let db = ourDatabase(oursPath, durability: .durable), let raw = cb_lmdb_open(rawPath, 0) else {
            throw BenchmarkSetupError("cannot open the paired stores")
        }
        let handle = SendableHandle(pointer: raw)
        let perTransaction = 5_000
        let (next, rawNext) = (Cursor(), Cursor())
        return (
            ours: {
                let start = next.advance(by: perTransaction, wrappingAt: count)
                try db.write { tx in
                    let table = try tx.open(benchTable)
                    for key in shuffled[start..<(start + perTransaction)] { try table.put(key, value) }
                }
            },
            raw: {
                let start = rawNext.advance(by: perTransaction, wrappingAt: count)
                blackHole(
                    rawShuffled.withUnsafeBufferPointer {
                        cb_lmdb_put_one_txn(handle.pointer, $0.baseAddress.map { $0 + start * 32 }, perTransaction, value, value.count)
                    })
            },
            close: {
                db.close()
                cb_lmdb_close(handle.pointer)
                removeDirectory(oursPath)
                removeDirectory(rawPath)
            }
        )
    }
    // One transaction a put, without fsync (500 a batch) and durable (20 a batch, each commit
    // fsynced: about 10 ms, so that the disk's latency averages out within a batch); sealed and
    // durable against LMDB's durable put plus one seal in C.
    for (durable, sealed) in [(false, false), (true, false), (true, true)] {
        let label = "Store insert one transaction each, \(durable ? "durable" : "no-sync")\(sealed ? ", sealed" : "")"
        pairedWithSetup(label, ops: durable ? 20 : 500, heavy: true) {
            let (db, raw, close) = try filledStores(durable: durable, sealed: sealed)
            let (next, rawNext) = (Cursor(), Cursor())
            return (
                ours: {
                    let index = next.advance(by: 1, wrappingAt: count)
                    try db.write { tx in try tx.open(benchTable).put(shuffled[index], value) }
                },
                raw: {
                    let index = rawNext.advance(by: 1, wrappingAt: count)
                    blackHole(
                        rawShuffled.withUnsafeBufferPointer {
                            let key = $0.baseAddress.map { $0 + index * 32 }
                            return sealed
                                ? cb_lmdb_put_sealed_per_txn(raw.pointer, key, 1, value, value.count, sealKey)
                                : cb_lmdb_put_per_txn(raw.pointer, key, 1, value, value.count)
                        })
                },
                close: close
            )
        }
    }
}

// MARK: Managers, end to end (store reads and writes included)

func managerBenchmarks() {
    for friends in [8, 64] {
        Benchmark("Manager prepare upload \(friends) friends ×20 [ours]", configuration: configuration(heavy: true)) { benchmark in
            let setup = try await ManagerSetup(friends: friends)
            defer { setup.close() }
            benchmark.startMeasurement()
            for _ in 0..<20 { try await setup.prepareUpload() }
            benchmark.stopMeasurement()
        }
        // The floor: the blob seal inside, for the user and every friend, keys cached.
        Benchmark("Manager prepare upload \(friends) friends ×20 [raw]", configuration: configuration(heavy: true)) { benchmark in
            let floor = try SealFloor(friends: friends)
            benchmark.startMeasurement()
            for _ in 0..<20 { floor.seal() }
            benchmark.stopMeasurement()
        }
        // Batches of about 10 ms: an upload is an actor hop and a write transaction, whose
        // scheduling noise averages out only over several of them.
        pairedAsync("Manager prepare upload \(friends) friends", ops: friends >= 64 ? 8 : 40) {
            let setup = try await ManagerSetup(friends: friends)
            let floor = try SealFloor(friends: friends)
            return (ours: { try await setup.prepareUpload() }, raw: { floor.seal() }, close: { setup.close() })
        }
    }

    Benchmark("Manager process fetch response of 50 ×10 [ours]", configuration: configuration(heavy: true)) { benchmark in
        let setup = try await ManagerSetup(friends: 50)
        defer { setup.close() }
        let response = try SignedFetchAnswer(friends: setup.friends, reader: setup.me, firstFix: 5)
        benchmark.startMeasurement()
        for _ in 0..<10 { blackHole(try await setup.app.location.processFetchResponse(response.body)) }
        benchmark.stopMeasurement()
    }
    // The floor: 50 Ed25519 verifications and blob opens in C.
    Benchmark("Manager process fetch response of 50 ×10 [raw]", configuration: configuration(heavy: true)) { benchmark in
        let setup = try await ManagerSetup(friends: 50)
        defer { setup.close() }
        let response = try SignedFetchAnswer(friends: setup.friends, reader: setup.me, firstFix: 5)
        benchmark.startMeasurement()
        for _ in 0..<10 { blackHole(response.floor()) }
        benchmark.stopMeasurement()
    }
    pairedAsync("Manager process fetch response of 50", ops: 4) {
        let setup = try await ManagerSetup(friends: 50)
        let response = try SignedFetchAnswer(friends: setup.friends, reader: setup.me, firstFix: 5)
        return (
            ours: { blackHole(try await setup.app.location.processFetchResponse(response.body)) }, raw: { blackHole(response.floor()) },
            close: { setup.close() }
        )
    }
}

/// An app on a scratch store (no fsync) with an identity whose keys the C floor knows, and
/// `friends` friends shared with.
struct ManagerSetup: Sendable {
    let app: CoordsApp
    let path: String
    let me: Identity
    let friends: [Ed25519SigningKey]
    private let clock = Cursor()

    init(friends count: Int) async throws {
        path = temporaryDirectory("app")
        app = try openApp(path)
        me = try Identity()
        _ = try await app.wallet.importSeed(me.key.seed, name: "Bench", server: "https://relay.example")
        var friends: [Ed25519SigningKey] = []
        for index in 0..<count {
            let friend = try Ed25519SigningKey.generate()
            friends.append(friend)
            _ = try await app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "f\(index)")
        }
        self.friends = friends
    }

    /// One upload of a fresh fix (each newer than the last).
    func prepareUpload() async throws {
        let timestamp = UInt64(1_763_805_600_000) + UInt64(clock.advance(by: 1, wrappingAt: Int.max))
        blackHole(try await app.location.prepareUpload(try Location(latitude: 47.3769, longitude: 8.5417, timestamp: timestamp)))
    }

    func close() {
        app.close()
        removeTree(path)
    }
}

/// `cb_blob_seal` for the user and `friends` friends with cached X25519 keys.
struct SealFloor: @unchecked Sendable {
    let raw: [UInt8]
    let count: Int
    let plaintext = WireLocation(latitudeE6: 47_376_900, longitudeE6: 8_541_700, altitude: 0, accuracy: 0, timestamp: 1_763_805_600_000).bytes
    let out: UnsafeMutableBufferPointer<UInt8>

    init(friends: Int) throws {
        count = friends + 1
        raw = try (0..<count).flatMap { _ in try X25519PublicKey(ed25519: try Ed25519SigningKey.generate().publicKey).rawRepresentation }
        out = .allocate(capacity: LocationBlob.byteCount(forEntryCount: LocationBlob.paddedEntryCount(forRecipientCount: count)))
    }

    func seal() { blackHole(cb_blob_seal(plaintext, raw, count, 0, out.baseAddress)) }
}

// MARK: How the client's cost grows with its friends

/// One app with 10, 100 and 1,000 friends (grown in place): the median prepare upload, how many
/// fetch requests and how long preparing them takes, processing every friend's answer (the
/// relay answers at most 50 ids per request), the store's size on disk and the process's RSS.
/// Written to growth-client.json for the report's table.
func clientGrowthBenchmark() {
    let sizes = quick ? [10, 100] : [10, 100, 1_000]
    Benchmark("Growth client friends", configuration: pairedConfiguration()) { _ in
        let setup = try await ManagerSetup(friends: 0)
        defer { setup.close() }
        var friends: [Ed25519SigningKey] = []
        var rows: [String: Any] = [:]
        func median(_ runs: Int, _ body: () async throws -> Void) async rethrows -> Double {
            var times: [Double] = []
            for _ in 0..<runs {
                let start = monotonicSeconds()
                try await body()
                times.append(monotonicSeconds() - start)
            }
            return times.sorted()[runs / 2]
        }
        for size in sizes {
            while friends.count < size {
                let friend = try Ed25519SigningKey.generate()
                _ = try await setup.app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "f\(friends.count)")
                friends.append(friend)
            }
            let upload = try await median(quick ? 5 : 21) { try await setup.prepareUpload() }
            var requests = 0
            let fetches = try await median(quick ? 5 : 21) { requests = try await setup.app.location.prepareFetches().count }
            // The relay's answers: one per request of 50 ids, each entry signed by its friend.
            var answers: [[UInt8]] = []
            for start in stride(from: 0, to: friends.count, by: 50) {
                let batch = friends[start..<min(start + 50, friends.count)]
                answers.append(try SignedFetchAnswer(friends: batch, reader: setup.me, firstFix: 1_763_805_600_000 + UInt64(start)).body)
            }
            // The first pass caches every location; later passes see the same answers (unchanged).
            let first = monotonicSeconds()
            for answer in answers { blackHole(try await setup.app.location.processFetchResponse(answer)) }
            let process = monotonicSeconds() - first
            rows["\(size)"] = [
                "friends": size, "prepare_upload_ms": upload * 1000, "fetch_requests": requests, "prepare_fetches_ms": fetches * 1000,
                "process_all_ms": process * 1000, "store_kib": directorySizeKiB(setup.path + "/store"), "rss_kib": residentKiB()
            ]
        }
        writeSideResult("growth-client.json", rows)
    }
}

/// The resident set of this process (VmRSS), KiB.
func residentKiB() -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") { return Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0 }
    }
    return 0
}

/// Blocks in use by the regular files directly in `path`, KiB (LMDB's file is sparse).
func directorySizeKiB(_ path: String) -> Int {
    var total = 0
    for file in ["data.mdb", "lock.mdb"] {
        var info = stat()
        if stat(path + "/" + file, &info) == 0 { total += Int(info.st_blocks) / 2 }
    }
    return total
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
    // Query points: half uniform on the sphere (mostly ocean), half near real places — the same
    // points in every run (a fixed seed), so two runs compare the same work.
    var rng = SeededGenerator(seed: 0x6E6F_7274_6821)
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
        // The speed-up, paired: every scanned point against the index on all 1,024 points,
        // interleaved, scaled to per-query times.
        Benchmark("Geocode nearest, \(set.label) ×1 [paired]", configuration: pairedConfiguration()) { _ in
            func timed(_ body: () throws -> Void) rethrows -> Double {
                let start = monotonicSeconds()
                try body()
                return monotonicSeconds() - start
            }
            let ratios = try await interleavedRatios(
                rounds: pairedRounds(heavy: true),
                ours: { try timed { for (latitude, longitude) in points { blackHole(try index.nearestPlace(latitude: latitude, longitude: longitude)) } } },
                raw: {
                    try timed {
                        for (latitude, longitude) in points.prefix(scanned) {
                            blackHole(try index.nearestPlaceByScanning(latitude: latitude, longitude: longitude))
                        }
                    }
                })
            writePaired("Geocode nearest, \(set.label)", ratios.map { $0 * Double(points.count) / Double(scanned) })
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

// MARK: Forward-secret sessions (PROTOCOL.md §10) vs the same libsodium calls in C

/// The two ends of a session the benchmarks advance.
final class BenchSessions: @unchecked Sendable {
    var a: RatchetSession
    var b: RatchetSession
    let toBob: SessionContext
    let toAlice: SessionContext

    init(alice: Identity, bob: Identity) throws {
        let prekey = try X25519PrivateKey.generate()
        let base = try X25519PrivateKey.generate()
        let bundle = PrekeyBundle(
            identity: bob.key.publicKey, signedPrekey: SignedPrekey.make(id: 1, key: prekey.publicKey, created: 0, identity: bob.key),
            oneTimePrekey: nil)
        let handshake = SessionMessage.Handshake(signedPrekeyID: 1, oneTimePrekeyID: nil, baseKey: base.publicKey)
        let secret = try X3DH.initiate(identity: alice.key, bundle: bundle, baseKey: base)
        a = try RatchetSession.initiate(sharedSecret: secret, remoteSignedPrekey: prekey.publicKey, handshake: handshake, now: 0)
        b = RatchetSession.respond(sharedSecret: secret, signedPrekey: prekey, handshake: handshake, now: 0)
        let envelope = Array("3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a60|\(PeerID(alice.key.publicKey).hex)|\(PeerID(bob.key.publicKey).hex)|x|y".utf8)
        toBob = SessionContext(sender: alice.key.publicKey, recipient: bob.key.publicKey, envelopeAssociatedData: envelope)
        toAlice = SessionContext(sender: bob.key.publicKey, recipient: alice.key.publicKey, envelopeAssociatedData: envelope)
        _ = try b.open(try a.seal([1], context: toBob, now: 0), context: toBob, now: 0)
        _ = try a.open(try b.seal([2], context: toAlice, now: 0), context: toAlice, now: 0)
    }
}

func sessionBenchmarks() {
    let alice: Identity
    let bob: Identity
    let sessions: BenchSessions
    do {
        alice = try Identity()
        bob = try Identity()
        sessions = try BenchSessions(alice: alice, bob: bob)
    } catch {
        print("sessionBenchmarks: setup failed: \(error)")
        return
    }
    let payload = randomBytes(1024)
    let chain = randomBytes(32)
    let ad = randomBytes(21 + 64 + SessionMessage.messagePrefixByteCount + sessions.toBob.envelopeAssociatedData.count)
    // A message on an established session (one direction: no DH step), sealed and opened.
    pair(
        "Session message seal+open 1 KiB", ops: 20,
        ours: {
            let message = try sessions.a.seal(payload, context: sessions.toBob, now: 0)
            blackHole(try sessions.b.open(message, context: sessions.toBob, now: 0))
        },
        raw: {
            var sealed = [UInt8](repeating: 0, count: 1040)
            var opened = [UInt8](repeating: 0, count: 1024)
            blackHole(cb_session_seal_open(chain, payload, payload.count, ad, ad.count, &sealed, &opened))
        })
    // A DH ratchet step each way (the reply makes the other side step), each with a message
    // sealed and opened: against two ratchet steps in C (two agreements, a key pair and two
    // KDF_RK each) and two messages on a chain.
    let root = randomBytes(32)
    let ratchetSecret = randomBytes(32)
    let ratchetPeer = (try? X25519PrivateKey.generate().publicKey.rawRepresentation) ?? []
    pair(
        "Session DH ratchet steps, both ways", ops: 10,
        ours: {
            blackHole(try sessions.a.open(try sessions.b.seal(payload, context: sessions.toAlice, now: 0), context: sessions.toAlice, now: 0))
            blackHole(try sessions.b.open(try sessions.a.seal(payload, context: sessions.toBob, now: 0), context: sessions.toBob, now: 0))
        },
        raw: {
            var fresh = [UInt8](repeating: 0, count: 32)
            var out = [UInt8](repeating: 0, count: 64)
            var sealed = [UInt8](repeating: 0, count: 1040)
            var opened = [UInt8](repeating: 0, count: 1024)
            for _ in 0..<2 {
                blackHole(cb_ratchet_step(root, ratchetSecret, ratchetPeer, &fresh, &out))
                blackHole(cb_session_seal_open(chain, payload, payload.count, ad, ad.count, &sealed, &opened))
            }
        })
    // The handshake on both sides (X3DH with a one-time prekey), against the same conversions,
    // agreements and HKDF for each side in C.
    guard let prekey = try? X25519PrivateKey.generate(), let oneTime = try? X25519PrivateKey.generate(),
        let base = try? X25519PrivateKey.generate()
    else { return }
    let bundle = PrekeyBundle(
        identity: bob.key.publicKey, signedPrekey: SignedPrekey.make(id: 1, key: prekey.publicKey, created: 0, identity: bob.key),
        oneTimePrekey: OneTimePrekey.make(id: 2, key: oneTime.publicKey, identity: bob.key))
    let prekeySecret = prekey.rawRepresentation.copyBytes()
    let oneTimeSecret = oneTime.rawRepresentation.copyBytes()
    let baseSecret = base.rawRepresentation.copyBytes()
    let prekeyPublic = prekey.publicKey.rawRepresentation
    let oneTimePublic = oneTime.publicKey.rawRepresentation
    let basePublic = base.publicKey.rawRepresentation
    let aliceX = alice.rawX25519Scalar
    let alicePublic = alice.key.publicKey.rawRepresentation
    let bobPublic = bob.key.publicKey.rawRepresentation
    pair(
        "Session handshake, both sides", ops: 10,
        ours: {
            blackHole(try X3DH.initiate(identity: alice.key, bundle: bundle, baseKey: base))
            blackHole(
                try X3DH.respond(
                    identity: bob.key, signedPrekey: prekey, oneTimePrekey: oneTime, initiator: alice.key.publicKey, baseKey: base.publicKey))
        },
        raw: {
            var out = [UInt8](repeating: 0, count: 32)
            // Alice: DH(IKx_A, SPK_B), identities, DH(EK_A, SPK_B), DH(EK_A, OPK_B).
            aliceX.withUnsafeBufferPointer { a in
                baseSecret.withUnsafeBufferPointer { e in
                    prekeyPublic.withUnsafeBufferPointer { spk in
                        oneTimePublic.withUnsafeBufferPointer { opk in
                            let secrets: [UnsafePointer<UInt8>?] = [a.baseAddress, e.baseAddress, e.baseAddress]
                            let publics: [UnsafePointer<UInt8>?] = [spk.baseAddress, spk.baseAddress, opk.baseAddress]
                            blackHole(cb_x3dh_side(alice.rawSecretKey, bobPublic, secrets, publics, 1, &out))
                        }
                    }
                }
            }
            // Bob: DH(SPK_B, IKx_A), identities, DH(SPK_B, EK_A), DH(OPK_B, EK_A).
            prekeySecret.withUnsafeBufferPointer { spk in
                oneTimeSecret.withUnsafeBufferPointer { opk in
                    basePublic.withUnsafeBufferPointer { e in
                        let secrets: [UnsafePointer<UInt8>?] = [spk.baseAddress, spk.baseAddress, opk.baseAddress]
                        let publics: [UnsafePointer<UInt8>?] = [e.baseAddress, e.baseAddress, e.baseAddress]
                        blackHole(cb_x3dh_side(bob.rawSecretKey, alicePublic, secrets, publics, 1, &out))
                    }
                }
            }
        })
}

// MARK: Groups (PROTOCOL.md §11) vs the same libsodium calls in C

/// An app whose user shares a group with `members` friends.
struct GroupSendSetup: Sendable {
    let app: CoordsApp
    let path: String
    let me: Identity
    let group: String
    static let text = "at the station, platform 4"

    init(members: Int) async throws {
        path = temporaryDirectory("group")
        app = try openApp(path)
        me = try Identity()
        _ = try await app.wallet.importSeed(me.key.seed, name: "Bench", server: "https://relay.example")
        var ids: [String] = []
        for index in 0..<members {
            let friend = try Ed25519SigningKey.generate()
            _ = try await app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "m\(index)")
            ids.append(friend.publicKey.base64URL)
        }
        group = try await app.groups.create(name: "Bench", members: ids).group.id
    }

    func send() async throws -> SentGroupMessage { try await app.groups.send(Self.text, to: group) }

    func close() {
        app.close()
        removeTree(path)
    }
}

/// The crypto of one group send in C, on inputs the size of ours.
final class GroupSendFloor: @unchecked Sendable {
    let chain = randomBytes(32)
    let plaintext: [UInt8]
    let core = randomBytes(19 + 32 + 16 + 12)
    let chainKey: Identity
    let sender: Identity
    let envelope: [UInt8]
    let members: Int
    var sealed: [UInt8]
    var signature = [UInt8](repeating: 0, count: 64)

    init(setup: GroupSendSetup, sample: SentGroupMessage, members: Int) throws {
        plaintext = MessagePayload(kind: "text", id: sample.message.id, text: GroupSendSetup.text, sentAt: sample.message.sentAt).json
        chainKey = try Identity()
        sender = setup.me
        guard let body = sample.queued.first?.item.request.body else { throw BenchmarkSetupError("the group send queued nothing") }
        envelope = try Envelope(json: try JSONValue.parse(body)).signedBytes
        self.members = members
        sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
    }

    func send() {
        blackHole(
            cb_group_send(
                chain, plaintext, plaintext.count, core, core.count, chainKey.rawSecretKey, sender.rawSecretKey, envelope, envelope.count,
                members, &sealed, &signature))
    }
}

/// A reader who shares a group with one sender, and batches of 50 of the sender's messages.
struct GroupFetchSetup: Sendable {
    let reader: CoordsApp
    let sender: CoordsApp
    let paths: [String]
    let batches: [[UInt8]]
    let sample: Envelope
    private let cursor = Cursor()

    init(batches count: Int) async throws {
        paths = [temporaryDirectory("group-reader"), temporaryDirectory("group-sender")]
        reader = try openApp(paths[0])
        sender = try openApp(paths[1])
        let r = try Identity()
        let s = try Identity()
        _ = try await reader.wallet.importSeed(r.key.seed, name: "Reader", server: "https://relay.example")
        _ = try await sender.wallet.importSeed(s.key.seed, name: "Sender", server: "https://relay.example")
        _ = try await reader.friends.add(id: s.key.publicKey.base64URL, server: "https://relay.example", name: "Sender")
        _ = try await sender.friends.add(id: r.key.publicKey.base64URL, server: "https://relay.example", name: "Reader")
        let created = try await sender.groups.create(name: "Bench", members: [r.key.publicKey.base64URL])
        let packets = try created.queued.map { try JSONValue.parse($0.item.request.body) }
        _ = try await reader.messages.processFetchResponse(JSONValue.object(["packets": .array(packets)]).serialized())
        var batches: [[UInt8]] = []
        var last: Envelope?
        for _ in 0..<count {
            var envelopes: [JSONValue] = []
            for _ in 0..<50 {
                let sent = try await sender.groups.send(GroupSendSetup.text, to: created.group.id)
                guard let body = sent.queued.first?.item.request.body else { throw BenchmarkSetupError("no copy for the reader") }
                let envelope = try JSONValue.parse(body)
                envelopes.append(envelope)
                last = try Envelope(json: envelope)
            }
            batches.append(JSONValue.object(["packets": .array(envelopes)]).serialized())
        }
        guard let last else { throw BenchmarkSetupError("no batches") }
        self.batches = batches
        sample = last
    }

    /// The next batch (each is processed once: a batch seen again would be duplicates).
    func process() async throws {
        let index = cursor.advance(by: 1, wrappingAt: batches.count - 1)
        blackHole(try await reader.messages.processFetchResponse(batches[index]))
    }

    func close() {
        reader.close()
        sender.close()
        for path in paths { removeTree(path) }
    }
}

/// The crypto of receiving 50 group messages in C: per message two signature checks, KDF_GK,
/// AES-256-GCM open and the signature of its ack request, on inputs the size of ours.
final class GroupFetchFloor: @unchecked Sendable {
    let chain = randomBytes(32)
    let core = randomBytes(19 + 32 + 16 + 12)
    let sealed: [UInt8]
    let chainPublic: [UInt8]
    let chainSignature: [UInt8]
    let senderPublic: [UInt8]
    let envelope: [UInt8]
    let envelopeSignature: [UInt8]
    let ack: [UInt8]
    let acker: Identity
    var opened: [UInt8]

    init(sample: Envelope) throws {
        let plaintext = MessagePayload(kind: "text", id: sample.id, text: GroupSendSetup.text, sentAt: 1).json
        let key = try SenderChain.step(SecretBytes(copying: chain)).messageKey.copyBytes()
        sealed = try AES256GCM.seal(
            plaintext, key: SecretBytes(copying: Array(key[0..<32])), nonce: try AES256GCM.Nonce(Array(key[32..<44])), associatedData: core)
        let chainKey = try Ed25519SigningKey.generate()
        chainPublic = chainKey.publicKey.rawRepresentation
        chainSignature = chainKey.signature(for: core + sealed)
        let senderKey = try Ed25519SigningKey.generate()
        senderPublic = senderKey.publicKey.rawRepresentation
        envelope = sample.signedBytes
        envelopeSignature = senderKey.signature(for: envelope)
        ack = MailboxAuth.signedBytes(method: "POST", path: "/v1/relay/messages/\(sample.id)/ack", timestamp: 1_800_000_000)
        acker = try Identity()
        opened = [UInt8](repeating: 0, count: plaintext.count)
    }

    func process() {
        for _ in 0..<50 {
            blackHole(
                cb_group_open(
                    chain, sealed, sealed.count, core, core.count, chainPublic, chainSignature, senderPublic, envelope, envelope.count,
                    envelopeSignature, acker.rawSecretKey, ack, ack.count, &opened))
        }
    }
}

func groupBenchmarks() {
    // A group of N: the user and N − 1 others, each sent one copy.
    for members in [8, 64, 256] {
        pairedAsync("Group send to \(members) members", ops: members >= 256 ? 2 : 4) {
            let setup = try await GroupSendSetup(members: members - 1)
            let sample = try await setup.send()
            let bytes = sample.queued.map(\.item.request.body.count).reduce(0, +)
            writeSideResult(
                "group-send-\(members).json", ["members": members, "envelopes": sample.queued.count, "wire_bytes": bytes])
            let floor = try GroupSendFloor(setup: setup, sample: sample, members: members - 1)
            return (ours: { blackHole(try await setup.send()) }, raw: { floor.send() }, close: { setup.close() })
        }
    }
    pairedAsync("Group process fetch of 50 messages", ops: 1) {
        let setup = try await GroupFetchSetup(batches: pairedRounds(heavy: true) + 4)
        let floor = try GroupFetchFloor(sample: setup.sample)
        return (ours: { try await setup.process() }, raw: { floor.process() }, close: { setup.close() })
    }
}

// MARK: Attachments (PROTOCOL.md §12): a 4 MiB file sealed and opened, against the same
// libsodium calls (XChaCha20-Poly1305 per 64 KiB chunk, SHA-256 of the object) in C.

func attachmentBenchmarks() {
    let size = 4 * 1_048_576
    let file = randomBytes(size)
    guard let key = try? SecretBytes(randomCount: 32), let object = try? ObjectID.random(),
        let stored = try? Objects.storedSize(size: UInt64(size))
    else { return }
    let rawKey = key.copyBytes()
    var sealed = [UInt8](repeating: 0, count: Int(stored))
    var digest = [UInt8](repeating: 0, count: 32)
    _ = cb_object_seal(rawKey, object.bytes, file, size, &sealed, &digest)
    let (objectBytes, objectDigest) = (sealed, digest)
    pair(
        "Attachment seal 4 MiB", ops: 2, heavy: true,
        ours: {
            var sealer = try ObjectSealer(key: key, object: object, size: UInt64(size))
            var out: [UInt8] = []
            out.reserveCapacity(Int(stored))
            try file.withUnsafeBytes { try sealer.update($0, appendingTo: &out) }
            blackHole(try sealer.finish(appendingTo: &out))
            blackHole(out)
        },
        raw: {
            var out = [UInt8](repeating: 0, count: Int(stored))
            var digest = [UInt8](repeating: 0, count: 32)
            blackHole(cb_object_seal(rawKey, object.bytes, file, size, &out, &digest))
            blackHole(out)
        })
    pair(
        "Attachment open 4 MiB", ops: 2, heavy: true,
        ours: {
            var opener = try ObjectOpener(key: key, object: object, size: UInt64(size), digest: objectDigest)
            var out: [UInt8] = []
            out.reserveCapacity(size)
            try objectBytes.withUnsafeBytes { try opener.update($0, appendingTo: &out) }
            try opener.finish()
            blackHole(out)
        },
        raw: {
            var out = [UInt8](repeating: 0, count: size)
            blackHole(cb_object_open(rawKey, object.bytes, objectBytes, objectBytes.count, objectDigest, &out))
            blackHole(out)
        })
}
