import ArgumentParser
import CoordsCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// `coords save MESSAGE-ID PATH`: downloads a file message's attachment from the sender's relay,
/// checks every chunk and the digest, and only then puts it at PATH (written to a temporary file
/// beside it and renamed; removed on any error).
struct Save: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Save a file someone sent you (checked end to end before it appears at PATH).",
        discussion: """
            MESSAGE-ID is the id `coords inbox`, `chat` and `watch` print after the file's name. When PATH is a \
            directory, the file keeps the name its sender gave it (checked: no path, no control characters). \
            An existing file is never replaced unless you add --force.
            """)
    @OptionGroup var options: CommandOptions
    @Argument(help: "The message's id.") var messageID: String
    @Argument(help: "Where to put the file (a file name, or a directory).") var path: String
    @Flag(help: "Replace PATH if it exists.") var force = false

    func checkArguments() throws {
        guard Envelope.isUUID(messageID) else {
            throw CLIFailure("\"\(messageID.prefix(64))\" is not a message id; `coords inbox --json` or `coords chat NAME --json` list them")
        }
        guard !path.isEmpty else { throw CLIFailure("give the path to save to, e.g. coords save \(messageID) ~/Downloads") }
    }

    func run(in session: Session) async throws {
        guard let message = try session.app.messages.message(id: messageID) else {
            throw CLIFailure(MessagesManagerError.unknownMessage(messageID).description)
        }
        var download = try session.app.messages.prepareDownload(messageID: messageID)
        guard let file = message.file else { throw CLIFailure("the message has no attachment") }
        let target = Self.target(path, file: file, id: message.id)
        var info = stat()
        if !force, lstat(target, &info) == 0 {
            throw CLIFailure("\(target) exists; choose another path or add --force to replace it")
        }
        // A short name of its own beside the target, so a 255-byte file name still fits.
        let temporary = Self.temporaryPath(beside: target)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CLIFailure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        var kept = false
        defer {
            close(fd)
            if !kept { unlink(temporary) }
        }
        let progress = Progress(verb: "Downloading", total: file.size, quiet: options.json)
        try await Self.download(&download, into: fd, path: temporary, progress: progress)
        guard fsync(fd) == 0 else { throw CLIFailure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        guard rename(temporary, target) == 0 else {
            throw CLIFailure("cannot move the file to \(target): \(String(cString: strerror(errno)))")
        }
        kept = true
        progress.done()
        if options.json {
            printJSON(.object(["id": .string(message.id), "path": .string(target), "file": file.hostJSON]))
        } else {
            printLine("Saved \(Terminal.safe(file.name.isEmpty ? "the file" : file.name)) (\(byteCount(file.size))) to \(target).")
            if message.disappearsAt != nil {
                printLine("This conversation's messages disappear; this copy does not. Delete it when you are done with it.")
            }
        }
    }

    /// The file to write: `path` itself, or inside it when it is a directory (the core's safe
    /// local name for the sender's name, ``FileAttachment/localName``, else one made of the
    /// message id).
    static func target(_ path: String, file: FileAttachment, id: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return path }
        let local = file.localName
        let safe = FileAttachment.isValidName(local) && local != "coords-file" ? local : "coords-file-" + id.prefix(8)
        return (path.hasSuffix("/") ? path : path + "/") + safe
    }

    /// `.coords-<16 hex>.part` in the target's folder: a name of fixed length, whatever the
    /// target's, hidden, and unlikely to meet another.
    static func temporaryPath(beside target: String) -> String {
        let folder = target.lastIndex(of: "/").map { String(target[...$0]) } ?? ""
        let random = (try? SystemRandomSource().bytes(8)) ?? []  // no randomness: the fixed name still works for one save at a time
        return folder + ".coords-" + (random.isEmpty ? "part" : Hex.encode(random)) + ".part"
    }

    /// Streams the object into `fd`, resuming with `Range` after a broken connection (up to
    /// ``TransferPace``'s tries and deadline). Refusals (a wrong, cut or altered object)
    /// end it at once.
    static func download(_ download: inout ObjectDownload, into fd: Int32, path: String, progress: Progress) async throws {
        // The core's one rule for transfers: how slow an answer may be, how long to wait, when to stop.
        var pace = TransferPace(bytes: download.storedSize, now: nowMilliseconds())
        progress.plan(
            "gives up after \(TransferPace.limitSeconds(bytes: download.storedSize) / 60) min at most, or \(TransferPace.attempts) tries in a row without progress"
        )
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(RelayHTTP.batchBytes + Objects.chunkByteCount)
        while true {
            let before = download.received
            let request = try download.request()
            let limit = download.storedSize.subtractingSaturating(download.received)
            var state = download
            let result: HTTPResult
            pace.beginAnswer(now: nowMilliseconds())
            do {
                result = try await RelayHTTP.stream(
                    request, limit: limit, timeout: Int64(clamping: pace.secondsLeft(now: nowMilliseconds())),
                    onHead: { status, length in  // 200 or 206 of exactly the length asked for: the body, or a refusal
                        _ = try state.check(status: status)
                        try state.check(contentLength: length)
                    },
                    onArrival: { count in
                        guard pace.took(count, now: nowMilliseconds()) else {
                            throw NetworkFailure(
                                description:
                                    "the relay sends too slowly (under \(TransferPace.minimumBytesPerWindow / 1024) KiB in \(TransferPace.windowSeconds) s)")
                        }
                    },
                    onBody: { piece in
                        plaintext.removeAll(keepingCapacity: true)
                        try state.take(piece, appendingTo: &plaintext)
                        try writeAll(fd, plaintext, path: path)
                        startWriteback(fd, from: state.opened.subtractingSaturating(UInt64(plaintext.count)), upTo: state.opened)
                        progress.update(state.opened)
                    })
                download = state
            } catch let failure as NetworkFailure {
                download = state  // chunks opened and written before the break stay; the next request resumes after them
                switch pace.failed(progressed: download.received > before, now: nowMilliseconds()) {
                case .giveUp(let reason): throw CLIFailure("the download failed: \(failure.description) (\(reason))")
                case .wait(let seconds):
                    progress.note("connection lost (\(failure.description)); resuming in \(seconds) s")
                    try await Waiting.sleep(seconds: Int64(clamping: seconds))
                }
                continue
            } catch let error as WireError {
                throw CLIFailure("the file was refused and nothing was saved: \(error.description)")
            }
            if result.status != 200, result.status != 206 {
                if result.status == 404 { throw CLIFailure("the file is no longer on the relay (it expired or its sender deleted it)") }
                // The core decides: 429 and 5xx are waited out for the relay's Retry-After; anything else is a refusal.
                let answer = try? download.check(status: result.status, retryAfter: result.retryAfter)  // nil: refused, told below
                guard case .retry(let asked) = answer, case .wait(let seconds) = pace.failed(progressed: false, retryAfter: asked, now: nowMilliseconds())
                else {
                    throw CLIFailure(RelayHTTP.refusal(result, action: "hand out the file"))
                }
                progress.note("the relay is busy (\(result.status)); trying again in \(seconds) s")
                try await Waiting.sleep(seconds: Int64(clamping: seconds))
                continue
            }
            do { try download.finish() } catch let error as WireError {
                if case .objectMismatch = error, download.received < download.storedSize {
                    // The answer ended early (a relay cut off or restarting): resume from what arrived.
                    switch pace.failed(progressed: download.received > before, now: nowMilliseconds()) {
                    case .giveUp(let reason): throw CLIFailure("the download kept breaking off: \(error.description) (\(reason))")
                    case .wait(let seconds): try await Waiting.sleep(seconds: Int64(clamping: seconds))
                    }
                    continue
                }
                throw CLIFailure("the file was refused and nothing was saved: \(error.description)")
            }
            return
        }
    }
}

/// Sending a file: the upload loop of `coords send NAME --file PATH`.
enum Transfer {
    /// The media type for a file name's extension (a hint for the reader; anything unknown is
    /// `application/octet-stream`).
    static func mediaType(forName name: String) -> String {
        let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        let types: [String: String] = [
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp", "heic": "image/heic",
            "pdf": "application/pdf", "txt": "text/plain", "json": "application/json", "zip": "application/zip",
            "mp3": "audio/mpeg", "m4a": "audio/mp4", "ogg": "audio/ogg", "opus": "audio/opus", "wav": "audio/wav",
            "mp4": "video/mp4", "mov": "video/quicktime", "gpx": "application/gpx+xml"
        ]
        return name.contains(".") ? types[ext] ?? "application/octet-stream" : "application/octet-stream"
    }

    /// Uploads the open file `fd` (`size` bytes) to our relay, part by part, resuming after a
    /// lost connection from where the relay's bytes end; returns the finished upload.
    static func upload(fd: Int32, size: UInt64, path: String, session: Session, progress: Progress) async throws -> ObjectUpload {
        var upload = try session.app.messages.prepareFileUpload(size: size)
        // The core's one rule for transfers: how long to wait after a failure, when to stop.
        var pace = TransferPace(bytes: upload.storedSize, now: nowMilliseconds())
        progress.plan(
            "gives up after \(TransferPace.limitSeconds(bytes: upload.storedSize) / 60) min at most, or \(TransferPace.attempts) tries in a row without progress"
        )
        var probe = false
        while true {
            let request: PreparedRequest
            if probe {
                request = try upload.probe(timestamp: try session.app.messages.nextSignatureTimestamp())
            } else {
                guard let need = upload.need else { return upload }
                let plaintext = try readAll(fd, at: need.offset, count: need.count, path: path)
                guard let part = try upload.supply(plaintext, timestamp: try session.app.messages.nextSignatureTimestamp()) else { continue }
                request = part
            }
            let result: HTTPResult
            do {
                result = try await RelayHTTP.send(request, timeout: Int64(clamping: min(120, pace.secondsLeft(now: nowMilliseconds()))))
            } catch let failure as NetworkFailure {
                switch pace.failed(progressed: false, now: nowMilliseconds()) {
                case .giveUp(let reason): throw CLIFailure("the upload failed: \(failure.description) (\(reason))")
                case .wait(let seconds):
                    progress.note("connection lost (\(failure.description)); resuming in \(seconds) s")
                    try await Waiting.sleep(seconds: Int64(clamping: seconds))
                }
                probe = true  // the part may or may not have been stored: ask the relay where its bytes end
                continue
            }
            probe = false
            let outcome: ObjectUpload.Progress
            do {
                outcome = try upload.handle(status: result.status, body: result.body, retryAfter: result.retryAfter)
            } catch let error as WireError {
                if case .relayError = error { throw CLIFailure(RelayHTTP.refusal(result, action: "store the file")) }
                throw CLIFailure("your relay answered the upload wrongly: \(error.description)")
            }
            switch outcome {
            case .stored(let stored):
                pace.progressed()
                progress.update(stored.multipliedSaturating(by: size) / max(upload.storedSize, 1))
            case .retry(let asked):
                switch pace.failed(progressed: false, retryAfter: asked, now: nowMilliseconds()) {
                case .giveUp(let reason): throw CLIFailure("your relay kept refusing the upload for now (\(reason)); try again later")
                case .wait(let seconds):
                    progress.note("the relay asked to wait; resuming in \(seconds) s")
                    try await Waiting.sleep(seconds: Int64(clamping: seconds))
                }
            }
        }
    }
}

/// A progress line on standard error for a long transfer ("Uploading 12.0 of 100.0 MiB (12 %)"),
/// at most one per second and never with --json.
final class Progress: @unchecked Sendable {
    let verb: String
    let total: UInt64
    let quiet: Bool
    private var lastShown: UInt64 = 0
    private var lastAt: UInt64 = 0

    init(verb: String, total: UInt64, quiet: Bool) {
        self.verb = verb
        self.total = total
        self.quiet = quiet
    }

    func update(_ done: UInt64) {
        let now = nowMilliseconds()
        guard !quiet, total >= 1_048_576, done != lastShown, now >= lastAt.addingSaturating(1_000) || done >= total else { return }
        lastShown = done
        lastAt = now
        let percent = done.multipliedSaturating(by: 100) / max(total, 1)
        printError("\(verb) \(byteCount(done)) of \(byteCount(total)) (\(percent) %)")
    }

    func note(_ text: String) {
        guard !quiet else { return }
        printError("coords: \(text)")
    }

    /// A line about the whole transfer (its time bound), for transfers that show progress.
    func plan(_ text: String) {
        guard !quiet, total >= 1_048_576 else { return }
        printError("coords: \(text)")
    }

    func done() { update(total) }
}

/// "512 bytes", "2.0 KiB", "12.3 MiB".
func byteCount(_ bytes: UInt64) -> String {
    if bytes < 1_024 { return "\(bytes) bytes" }
    let (unit, scale): (String, Double) = bytes < 1_048_576 ? ("KiB", 1_024) : ("MiB", 1_048_576)
    let value = (Double(bytes) / scale * 10).rounded() / 10
    return "\(value) \(unit)"
}

/// The text a message shows in a terminal: its text, and for a file what it is and how to save it.
func shownText(_ message: MessageRecord) -> String {
    var text = Terminal.safe(message.text)
    if let file = message.file {
        let name = file.name.isEmpty ? "a file" : Terminal.safe(file.name)
        text += (text.isEmpty ? "" : " ") + "[file: \(name), \(byteCount(file.size)), \(Terminal.safe(file.type))]"
        if !message.outgoing { text += " — coords save \(message.id) PATH" }
    } else if message.kind == FileAttachment.kind {
        text += (text.isEmpty ? "" : " ") + "[a file message that breaks the format; it cannot be saved]"
    }
    return text
}

/// Reads exactly `count` bytes of `fd` at `offset`.
func readAll(_ fd: Int32, at offset: UInt64, count: Int, path: String) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
        guard let start = off_t(exactly: offset.addingSaturating(UInt64(done))) else { throw CLIFailure("\(path) is too large") }
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress?.advanced(by: done), count - done, start) }
        if n < 0, errno == EINTR { continue }
        guard n >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard n > 0 else { throw CLIFailure("\(path) became shorter while it was being sent; nothing was announced") }
        done += n
    }
    return bytes
}

/// Writes all of `bytes` to `fd`.
#if os(Linux)
/// glibc's `sync_file_range(2)` (declared only under `_GNU_SOURCE`, which the Glibc module does not set).
@_silgen_name("sync_file_range")
private func syncFileRange(_ fd: Int32, _ offset: Int64, _ count: Int64, _ flags: UInt32) -> Int32
#endif

/// Asks the kernel to start writing the file's bytes `start..<end` to disk now, without waiting,
/// so that the fsync at the end has little left to wait for (the disk works while the download
/// goes on). Advisory: the fsync is what makes the file durable.
func startWriteback(_ fd: Int32, from start: UInt64, upTo end: UInt64) {
    #if os(Linux)
    guard end > start else { return }
    let syncFileRangeWrite: UInt32 = 2  // SYNC_FILE_RANGE_WRITE
    _ = syncFileRange(fd, Int64(clamping: start), Int64(clamping: end - start), syncFileRangeWrite)  // refused: the fsync does it all
    #endif
}

func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress?.advanced(by: done), bytes.count - done) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno))); nothing was saved") }
        done += n
    }
}

/// `coords send NAME --file PATH [CAPTION]`.
enum FileToSend {
    /// Refuses a path that cannot be sent before the session opens: not a readable regular file,
    /// over 100 MiB, or a media type that breaks §12.3.
    static func check(path: String, mediaType: String?) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw CLIFailure("\(path) is not a regular file") }
        guard info.st_size >= 0, UInt64(info.st_size) <= Objects.maximumSize else {
            throw CLIFailure("\(path) is \(byteCount(UInt64(clamping: info.st_size))); a file may be at most \(byteCount(Objects.maximumSize))")
        }
        if let mediaType, !FileAttachment.isValidType(mediaType) {
            throw CLIFailure("\"\(mediaType.prefix(130))\" is not a media type like image/jpeg (type/subtype, no parameters)")
        }
    }

    /// Uploads the file, then announces it to `friendID`: the message is queued only once the
    /// relay holds the whole file.
    static func send(path: String, mediaType: String?, caption: String, to friendID: String, session: Session, quiet: Bool) async throws
        -> SentMessage
    {
        let done = try await upload(path: path, session: session, quiet: quiet)
        return try await session.app.messages.sendFile(done.upload, type: mediaType ?? done.type, name: done.name, caption: caption, to: friendID)
    }

    /// Uploads the file at `path`; returns the finished upload, the name to announce (its base
    /// name when that is a plain file name, else none) and the media type its extension suggests.
    static func upload(path: String, session: Session, quiet: Bool) async throws -> (upload: ObjectUpload, name: String, type: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size >= 0 else { throw CLIFailure("\(path) is not a regular file") }
        let size = UInt64(info.st_size)
        guard size <= Objects.maximumSize else { throw CLIFailure("\(path) is larger than \(byteCount(Objects.maximumSize))") }
        let base = path.split(separator: "/").last.map(String.init) ?? ""
        let name = FileAttachment.isValidName(base) ? base : ""
        let progress = Progress(verb: "Uploading", total: size, quiet: quiet)
        let upload = try await Transfer.upload(fd: fd, size: size, path: path, session: session, progress: progress)
        progress.done()
        return (upload, name, Transfer.mediaType(forName: name))
    }
}
