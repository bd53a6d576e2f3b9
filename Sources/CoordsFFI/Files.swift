// Files as messages at the C ABI (PROTOCOL.md §12): the host hands over file descriptors; the
// library reads one upload part at a time with pread and writes opened plaintext as it arrives,
// so no whole file is ever in memory on either side of the ABI.
import CCoordsABI
import CPlatform
import CoordsCore
import Synchronization

/// An upload under way: the app, the host's file descriptor (borrowed), the core's state and the
/// transfer's pace (``TransferPace``, on the system clock).
final class UploadHandle: Sendable {
    let app: CoordsCore.CoordsApp
    let fd: Int32
    let upload: Mutex<ObjectUpload>
    let pace: Mutex<TransferPace>
    init(app: CoordsCore.CoordsApp, fd: Int32, upload: ObjectUpload) {
        self.app = app
        self.fd = fd
        self.upload = Mutex(upload)
        pace = Mutex(TransferPace(bytes: upload.storedSize, now: TimeSource.system.now()))
    }
}

/// A download under way: the host's file descriptor (borrowed) for the plaintext, the core's
/// state, and the transfer's pace with the bytes received when the current answer was asked for.
final class DownloadHandle: Sendable {
    let fd: Int32
    let download: Mutex<ObjectDownload>
    let pace: Mutex<(pace: TransferPace, receivedAtRequest: UInt64)>
    init(fd: Int32, download: ObjectDownload) {
        self.fd = fd
        self.download = Mutex(download)
        pace = Mutex((TransferPace(bytes: download.storedSize, now: TimeSource.system.now()), 0))
    }
}

/// Writes what `next` says to the host's out-pointers: the seconds to wait, or 0 and why it gave up.
private func report(_ next: TransferPace.Next, wait: UnsafeMutablePointer<UInt64>, reason: UnsafeMutablePointer<CoordsBuffer>) throws {
    switch next {
    case .wait(let seconds): wait.pointee = max(seconds, 1)
    case .giveUp(let why):
        wait.pointee = 0
        try why.write(to: reason)
    }
}

let uploads = HandleTable<UploadHandle>(kind: 0xC)
let downloads = HandleTable<DownloadHandle>(kind: 0xD)

extension FFIError {
    /// Reading or writing the host's file descriptor failed.
    static func file(_ what: String, _ code: Int32 = coords_errno()) -> FFIError {
        FFIError(code: COORDS_ERR_FILE_IO, message: "\(what): \(String(cString: strerror(code)))")
    }
}

/// The size of the regular file open at `fd`.
private func regularFileSize(_ fd: Int32) throws -> UInt64 {
    var info = stat()
    guard fd >= 0, fstat(fd, &info) == 0 else { throw FFIError.file("fd is not an open file descriptor") }
    guard coords_mode_is_regular(info.st_mode) != 0, info.st_size >= 0 else { throw FFIError.invalid("fd must be a regular file") }
    return UInt64(info.st_size)
}

@_cdecl("coords_upload_begin")
public func ffiUploadBegin(_ handle: Handle, _ fd: Int32, _ uploadOut: UnsafeMutablePointer<OpaquePointer?>?, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in
        let out = try Argument.output(uploadOut, "upload_out")
        out.pointee = nil
        let size = try regularFileSize(fd)
        let upload = try app.messages.prepareFileUpload(size: size)
        out.pointee = uploads.insert(UploadHandle(app: app, fd: fd, upload: upload))
    }
}

@_cdecl("coords_upload_next")
public func ffiUploadNext(_ handle: Handle, _ moreOut: UnsafeMutablePointer<Int32>?, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let more = try Argument.output(moreOut, "more_out")
        more.pointee = 0
        let out = try Argument.buffer(requestOut, "request_json_out")
        let state = try uploads.get(handle, "upload")
        while true {
            guard let need = state.upload.withLock({ $0.need }) else { return }
            var plaintext = [UInt8](repeating: 0, count: need.count)
            var done = 0
            while done < need.count {
                guard let offset = off_t(exactly: need.offset.addingSaturating(UInt64(done))) else { throw FFIError.invalid("the file is too large") }
                // done < need.count (the loop condition): no underflow
                let n = plaintext.withUnsafeMutableBytes { pread(state.fd, $0.baseAddress?.advanced(by: done), need.count - done, offset) }
                if n < 0, coords_errno() == EINTR { continue }
                guard n >= 0 else { throw FFIError.file("reading the file failed") }
                guard n > 0 else { throw FFIError(code: COORDS_ERR_FILE_IO, message: "the file became shorter while it was being sent") }
                done += n
            }
            let timestamp = try state.app.messages.nextSignatureTimestamp()
            // Chunks the relay holds already are sealed for the digest only (nil): read on.
            if let request = try state.upload.withLock({ try $0.supply(plaintext, timestamp: timestamp) }) {
                try request.json.write(to: out)
                more.pointee = 1
                return
            }
        }
    }
}

@_cdecl("coords_upload_probe")
public func ffiUploadProbe(_ handle: Handle, _ requestOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(requestOut, "request_json_out")
        let state = try uploads.get(handle, "upload")
        let timestamp = try state.app.messages.nextSignatureTimestamp()
        try state.upload.withLock { try $0.probe(timestamp: timestamp) }.json.write(to: out)
    }
}

@_cdecl("coords_upload_process")
public func ffiUploadProcess(
    _ handle: Handle, _ status: Int32, _ body: UnsafePointer<UInt8>?, _ length: Int, _ retryAfter: CString,
    _ waitOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let wait = try Argument.output(waitOut, "retry_after_seconds_out")
        wait.pointee = 0
        let state = try uploads.get(handle, "upload")
        let bytes = try Argument.bytes(body, length, "body", maximum: ClientLimits.smallAnswerBytes)
        let header = try Argument.optionalString(retryAfter, "retry_after")
        let progress = try state.upload.withLock { try $0.handle(status: Int(status), body: bytes, retryAfter: header) }
        switch progress {
        case .retry(let seconds): wait.pointee = max(seconds, 1)
        case .stored: state.pace.withLock { $0.progressed() }
        }
    }
}

@_cdecl("coords_upload_failed")
public func ffiUploadFailed(
    _ handle: Handle, _ retryAfter: UInt64, _ waitOut: UnsafeMutablePointer<UInt64>?, _ reasonOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    transferFailed(waitOut, reasonOut, error) { now in
        let state = try uploads.get(handle, "upload")
        return state.pace.withLock { $0.failed(progressed: false, retryAfter: retryAfter == 0 ? nil : retryAfter, now: now) }
    }
}

/// The shared path of `coords_upload_failed` and `coords_download_failed`: checks the
/// out-pointers, asks `decide` (given the system clock) and writes its answer.
private func transferFailed(
    _ waitOut: UnsafeMutablePointer<UInt64>?, _ reasonOut: BufferOut, _ error: ErrorOut, _ decide: (UInt64) throws -> TransferPace.Next
) -> Int32 {
    exported(error) {
        let wait = try Argument.output(waitOut, "wait_seconds_out")
        let reason = try Argument.buffer(reasonOut, "reason_out")
        wait.pointee = 0
        try report(try decide(TimeSource.system.now()), wait: wait, reason: reason)
    }
}

@_cdecl("coords_upload_progress")
public func ffiUploadProgress(_ handle: Handle, _ sentOut: UnsafeMutablePointer<UInt64>?, _ sizeOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut)
    -> Int32
{
    exported(error) {
        let sent = try Argument.output(sentOut, "sent_out")
        let size = try Argument.output(sizeOut, "size_out")
        let upload = try uploads.get(handle, "upload").upload.withLock { $0 }
        size.pointee = upload.size
        sent.pointee = upload.stored.multipliedSaturating(by: upload.size) / max(upload.storedSize, 1)
    }
}

/// The arguments of an announcement (`coords_upload_send` and `_send_group`): the target, the
/// type, the name and the caption; the upload; and the buffer for the answer.
private func announcing(
    _ handle: Handle, _ target: CString, _ targetName: String, _ type: CString, _ name: CString, _ caption: CString, _ sentOut: BufferOut,
    _ error: ErrorOut, _ body: (CoordsCore.CoordsApp, ObjectUpload, String, String, String, String) throws -> JSONValue
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(sentOut, "sent_json_out")
        let state = try uploads.get(handle, "upload")
        let to = try Argument.string(target, targetName)
        let mediaType = try Argument.string(type, "type")
        let fileName = try Argument.optionalString(name, "name") ?? ""
        let text = try Argument.optionalString(caption, "caption") ?? ""
        try body(state.app, state.upload.withLock { $0 }, to, mediaType, fileName, text).write(to: out)
    }
}

@_cdecl("coords_upload_send")
public func ffiUploadSend(
    _ handle: Handle, _ friendID: CString, _ type: CString, _ name: CString, _ caption: CString, _ sentOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    announcing(handle, friendID, "friend_id", type, name, caption, sentOut, error) { app, upload, friend, type, name, caption in
        let sent = try blocking { try await app.messages.sendFile(upload, type: type, name: name, caption: caption, to: friend) }
        return .object(["message": Record.message(sent.message), "request": sent.request.json, "outbox_id": .integer(sent.outboxID)])
    }
}

@_cdecl("coords_upload_send_group")
public func ffiUploadSendGroup(
    _ handle: Handle, _ groupID: CString, _ type: CString, _ name: CString, _ caption: CString, _ sentOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    announcing(handle, groupID, "group", type, name, caption, sentOut, error) { app, upload, group, type, name, caption in
        let sent = try blocking { try await app.groups.sendFile(upload, type: type, name: name, caption: caption, to: group) }
        return .object([
            "message": Record.message(sent.message), "queued": .array(sent.queued.map(Record.outboxEntry)),
            "unreachable": .array(sent.unreachable.map { .string($0) })
        ])
    }
}

@_cdecl("coords_upload_free")
public func ffiUploadFree(_ handle: Handle) {
    guard handle != nil else { return }
    _ = try? uploads.remove(handle, "upload")  // a stale or foreign handle is ignored, as free() of NULL is
}

@_cdecl("coords_download_begin")
public func ffiDownloadBegin(
    _ handle: Handle, _ messageID: CString, _ fd: Int32, _ downloadOut: UnsafeMutablePointer<OpaquePointer?>?, _ error: ErrorOut
) -> Int32 {
    withApp(handle, error) { app in
        let out = try Argument.output(downloadOut, "download_out")
        out.pointee = nil
        let id = try Argument.string(messageID, "message_id")
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0 else { throw FFIError.file("fd is not an open file descriptor") }
        let download = try app.messages.prepareDownload(messageID: id)
        out.pointee = downloads.insert(DownloadHandle(fd: fd, download: download))
    }
}

@_cdecl("coords_download_request")
public func ffiDownloadRequest(_ handle: Handle, _ requestOut: BufferOut, _ maximumOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(requestOut, "request_json_out")
        let maximum = try Argument.output(maximumOut, "max_bytes_out")
        let state = try downloads.get(handle, "download")
        let download = state.download.withLock { $0 }
        try download.request().json.write(to: out)
        maximum.pointee = download.storedSize.subtractingSaturating(download.received)
        let now = TimeSource.system.now()
        state.pace.withLock {
            $0.pace.beginAnswer(now: now)
            $0.receivedAtRequest = download.received
        }
    }
}

@_cdecl("coords_download_pace")
public func ffiDownloadPace(_ handle: Handle, _ arrived: UInt64, _ keepOut: UnsafeMutablePointer<Int32>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let keep = try Argument.output(keepOut, "keep_out")
        keep.pointee = 0
        let state = try downloads.get(handle, "download")
        let now = TimeSource.system.now()
        keep.pointee = state.pace.withLock { $0.pace.took(Int(clamping: arrived), now: now) } ? 1 : 0
    }
}

@_cdecl("coords_download_failed")
public func ffiDownloadFailed(
    _ handle: Handle, _ retryAfter: UInt64, _ waitOut: UnsafeMutablePointer<UInt64>?, _ reasonOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    transferFailed(waitOut, reasonOut, error) { now in
        let state = try downloads.get(handle, "download")
        let received = state.download.withLock { $0.received }
        return state.pace.withLock {
            $0.pace.failed(progressed: received > $0.receivedAtRequest, retryAfter: retryAfter == 0 ? nil : retryAfter, now: now)
        }
    }
}

@_cdecl("coords_transfer_seconds_left")
public func ffiTransferSecondsLeft(_ upload: Handle, _ download: Handle, _ secondsOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let seconds = try Argument.output(secondsOut, "seconds_out")
        let now = TimeSource.system.now()
        if download != nil {
            seconds.pointee = try downloads.get(download, "download").pace.withLock { $0.pace.secondsLeft(now: now) }
        } else {
            seconds.pointee = try uploads.get(upload, "upload").pace.withLock { $0.secondsLeft(now: now) }
        }
    }
}

@_cdecl("coords_download_check")
public func ffiDownloadCheck(
    _ handle: Handle, _ status: Int32, _ retryAfter: CString, _ waitOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let wait = try Argument.output(waitOut, "retry_after_seconds_out")
        wait.pointee = 0
        let header = try Argument.optionalString(retryAfter, "retry_after")
        let answer = try downloads.get(handle, "download").download.withLock { try $0.check(status: Int(status), retryAfter: header) }
        if case .retry(let seconds) = answer { wait.pointee = seconds }
    }
}

@_cdecl("coords_download_check_length")
public func ffiDownloadCheckLength(_ handle: Handle, _ contentLength: CString, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let header = try Argument.optionalString(contentLength, "content_length")
        try downloads.get(handle, "download").download.withLock { try $0.check(contentLength: header) }
    }
}

@_cdecl("coords_download_take")
public func ffiDownloadTake(_ handle: Handle, _ bytes: UnsafePointer<UInt8>?, _ length: Int, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let state = try downloads.get(handle, "download")
        guard length >= 0 else { throw FFIError.tooLarge("bytes", length, Int(Objects.maximumStored)) }
        if length == 0 { return }
        guard let bytes else { throw FFIError.null("bytes") }
        var plaintext: [UInt8] = []
        try state.download.withLock { download in
            try download.take(UnsafeRawBufferPointer(start: bytes, count: length), appendingTo: &plaintext)
        }
        var done = 0
        while done < plaintext.count {
            // done < plaintext.count: no underflow
            let n = plaintext.withUnsafeBytes { write(state.fd, $0.baseAddress?.advanced(by: done), plaintext.count - done) }
            if n < 0, coords_errno() == EINTR { continue }
            guard n > 0 else { throw FFIError.file("writing the file failed") }
            done += n
        }
    }
}

@_cdecl("coords_download_progress")
public func ffiDownloadProgress(
    _ handle: Handle, _ receivedOut: UnsafeMutablePointer<UInt64>?, _ sizeOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let received = try Argument.output(receivedOut, "received_out")
        let size = try Argument.output(sizeOut, "size_out")
        let download = try downloads.get(handle, "download").download.withLock { $0 }
        received.pointee = download.opened
        size.pointee = download.size
    }
}

@_cdecl("coords_download_finish")
public func ffiDownloadFinish(_ handle: Handle, _ completeOut: UnsafeMutablePointer<Int32>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let complete = try Argument.output(completeOut, "complete_out")
        complete.pointee = 0
        let state = try downloads.get(handle, "download")
        let download = state.download.withLock { $0 }
        guard download.received >= download.storedSize else { return }  // cut off: the next request resumes it
        try state.download.withLock { try $0.finish() }
        guard coords_sync_file(state.fd) == 0 || coords_errno() == EINVAL else { throw FFIError.file("writing the file to disk failed") }
        complete.pointee = 1
    }
}

@_cdecl("coords_download_free")
public func ffiDownloadFree(_ handle: Handle) {
    guard handle != nil else { return }
    _ = try? downloads.remove(handle, "download")  // a stale or foreign handle is ignored, as free() of NULL is
}
