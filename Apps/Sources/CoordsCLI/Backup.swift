import ArgumentParser
import CoordsCore

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export or import an encrypted backup of your identity and friends.",
        subcommands: [Export.self, Import.self])

    struct Export: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Write an encrypted backup to a file.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The backup file to write.") var file: String

        func run(in session: Session) async throws {
            let passphrase = try Passphrase.read(prompt: "Backup passphrase: ", confirm: true, variable: "COORDS_BACKUP_PASSPHRASE")
            let backup = try await session.app.wallet.exportBackup(passphrase: passphrase)
            try writeFile(file, backup)
            if options.json { return printJSON(.object(["file": .string(file), "bytes": .integer(UInt64(backup.count))])) }
            printLine("Wrote an encrypted backup (\(backup.count) bytes) to \(file). Keep the passphrase somewhere safe.")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore a backup into a new data directory.",
            discussion: "Atomic like `coords init`: a failure leaves no data directory behind.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The backup file to read.") var file: String

        func run() async throws {
            try await runReporting {
                let backup = try readFile(file)
                let passphrase = try Passphrase.read(prompt: "Backup passphrase: ", confirm: false, variable: "COORDS_BACKUP_PASSPHRASE")
                let (id, friends, home) = try await Session.create(options.global) { session in
                    let id = try await session.app.wallet.importBackup(backup, passphrase: passphrase)
                    session.writePublicProfile()
                    return (id, try session.app.friends.list().count, session.home)
                }
                if options.json { return printJSON(.object(["id": .string(id), "friends": .integer(UInt64(friends))])) }
                printLine("Restored identity \(id) with \(friends) friend(s) into \(home).")
            }
        }
    }
}
