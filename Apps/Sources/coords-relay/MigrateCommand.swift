import ArgumentParser
import CoordsBuildInfo
import CoordsCore
import CoordsRelay
import Foundation
import Logging

/// `coords-relay migrate`: copies an LMDB relay's data into PostgreSQL (docs/RELAY.md, "Scaling").
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy an LMDB relay's data into PostgreSQL.",
        discussion: """
            Copies uploads, deletions, mailbox envelopes, acknowledged ids and used request \
            signatures. Idempotent: a second run copies only what changed, and never rolls the \
            target back, so it can run once while the LMDB relay still serves and once more after \
            it stopped. Prints a progress line on standard error. Exit status 0 when done, 66 when \
            the source holds no relay data, 69 when PostgreSQL is unreachable or refuses.
            """)

    @Option(name: .customLong("from-data-dir"), help: "The LMDB relay's data directory (its --data-dir).")
    var source: String

    @Option(
        name: .customLong("to-postgres"),
        help: "postgres://user:password@host:port/db[?sslmode=require] (password also from PGPASSWORD) [COORDS_POSTGRES_URL].")
    var targetOption: String?
    /// `--to-postgres`, else `COORDS_POSTGRES_URL` (an optional option takes no default value).
    var target: String? { targetOption ?? environment("COORDS_POSTGRES_URL") }

    @Flag(help: "No progress line, only the summary.")
    var quiet = false

    func validate() throws {
        guard target != nil else { throw ValidationError("--to-postgres URL (or COORDS_POSTGRES_URL) is required") }
    }

    func run() async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source + "/data.mdb", isDirectory: &isDirectory), !isDirectory.boolValue else {
            printError("coords-relay migrate: error: no relay data in \(source) (expected \(source)/data.mdb)")
            throw ExitCode(66)  // EX_NOINPUT
        }
        var logger = Logger(label: "coords.relay.migrate")
        logger.logLevel = .warning
        let from: LMDBRelayStore
        do {
            from = try LMDBRelayStore(directory: source, logger: logger)
        } catch {
            printError("coords-relay migrate: error: cannot open \(source): \(error)")
            throw ExitCode(66)
        }
        let to: PostgresRelayStore
        do {
            let location = try PostgresLocation(url: target ?? "", environmentPassword: environment("PGPASSWORD"))
            to = try await PostgresRelayStore(location: location, poolSize: 16, operationTimeout: .seconds(30), logger: logger)
        } catch {
            await from.close()
            printError("coords-relay migrate: error: \(error)")
            throw ExitCode(69)
        }
        let started = ContinuousClock.now
        let meter = ProgressMeter(quiet: quiet)
        do {
            let report = try await RelayMigration.copy(from: from, to: to) { read, total in meter.update(read, total) }
            meter.finish()
            let seconds = (ContinuousClock.now - started).components.seconds
            print("migrated \(source) → \(to.location.redacted) in \(seconds) s")
            print("  read:   \(report.read)")
            print("  copied: \(report.copied) (the rest was already there)")
        } catch {
            meter.finish()
            await to.close()
            await from.close()
            printError("coords-relay migrate: error: \(error) (nothing is lost: run the same command again)")
            throw ExitCode(69)
        }
        await to.close()
        await from.close()
    }
}

/// The progress line: rewritten in place on a terminal, a new line every 2 s otherwise.
final class ProgressMeter: @unchecked Sendable {
    private let lock = NSLock()
    private let quiet: Bool
    private let terminal = isatty(2) == 1
    private var last = ContinuousClock.now - .seconds(10)
    private var wrote = false

    init(quiet: Bool) { self.quiet = quiet }

    func update(_ read: RelayExportCounts, _ total: RelayExportCounts) {
        guard !quiet else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        guard now - last >= (terminal ? .milliseconds(200) : .seconds(2)) || read.total == total.total else { return }
        last = now
        let percent = total.total == 0 ? 100 : min(100, read.total.multipliedSaturating(by: 100) / total.total)
        let line =
            "migrate: \(percent)% · \(read.records)/\(total.records) uploads · \(read.tombstones)/\(total.tombstones) deletions · "
            + "\(read.envelopes)/\(total.envelopes) envelopes · \(read.envelopeTombstones)/\(total.envelopeTombstones) acked ids · "
            + "\(read.seenSignatures)/\(total.seenSignatures) signatures"
        if terminal {
            let bytes = Array(("\r\u{1B}[K" + line).utf8)
            _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            wrote = true
        } else {
            printError(line)
        }
    }

    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if wrote { printError("") }
    }
}
