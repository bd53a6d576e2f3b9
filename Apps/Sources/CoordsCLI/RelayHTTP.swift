import ArgumentParser
import AsyncHTTPClient
import CoordsCore
import CoordsTLS
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// What a relay answered.
struct HTTPResult {
    let status: Int
    let body: [UInt8]
    /// The answer's `Retry-After` header (429 and 5xx), if any.
    var retryAfter: String? = nil
    var isSuccess: Bool { (200..<300).contains(status) }
}

/// The relay could not be reached (DNS, connection refused, timeout, TLS).
struct NetworkFailure: Error, CustomStringConvertible {
    let description: String
}

/// Sends prepared requests with AsyncHTTPClient, within the client's limits (PROTOCOL.md §4.1):
/// connect, read and whole-request deadlines, the request's own answer-size cap, and no
/// redirects. A relay that breaks a limit is reported as unreachable or refused, never waited on.
enum RelayHTTP {
    /// One client for the process: a refused or unreachable relay fails within seconds instead
    /// of being retried until the request deadline — the outbox is the CLI's retry mechanism.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(ClientLimits.connectSeconds), read: .seconds(ClientLimits.readSeconds))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        if case .success(let tls) = trust { configuration.tlsConfiguration = tls }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The TLS configuration of every relay connection (HTTPS and `wss://`): the system's trust
    /// store, or the bundle `SSL_CERT_FILE` names; a failure is reported by the first `https://`
    /// request instead of being ignored.
    static let trust = Result { try TrustStore.clientConfiguration() }

    /// The reason a request to `url` failed, in one line: a refused certificate is explained
    /// (wrong host name, expired, self-signed, unknown authority), anything else shortened.
    static func failureReason(_ error: any Error, url: String) async -> String {
        if CertificateDiagnosis.isCertificateRefusal(error), let target = URLComponents(string: url), let host = target.host {
            return await CertificateDiagnosis.explain(error, host: host, port: target.port ?? 443)
        }
        return networkReason(error)
    }

    /// Refuses an `https://` request when the trust store named by the environment is unusable.
    private static func checkTrust(_ url: String) throws {
        if case .failure(let error) = trust, url.lowercased().hasPrefix("https://") {
            throw NetworkFailure(description: "cannot reach \(url): \(error)")
        }
    }

    /// The whole request was not done within its deadline.
    private struct DeadlineExceeded: Error {}

    /// Sends `request` and reads its answer: at most `request.maximumResponseBytes`, all within
    /// `timeout` seconds (the head, the body and everything before them).
    /// - Throws: ``NetworkFailure`` (unreachable, too slow, or an answer over the cap).
    static func send(_ request: PreparedRequest, timeout: Int64 = ClientLimits.requestSeconds) async throws -> HTTPResult {
        var http = HTTPClientRequest(url: request.url)
        http.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { http.body = .bytes(ByteBuffer(bytes: request.body)) }
        let limit = request.maximumResponseBytes
        let prepared = http
        try checkTrust(request.url)
        do {
            return try await withThrowingTaskGroup(of: HTTPResult.self) { group in
                group.addTask {
                    let response = try await client.execute(prepared, deadline: .now() + .seconds(timeout))
                    let body = try await response.body.collect(upTo: limit)
                    return HTTPResult(
                        status: Int(response.status.code), body: Array(body.readableBytesView), retryAfter: response.headers.first(name: "Retry-After"))
                }
                group.addTask {
                    try await Waiting.sleep(seconds: timeout)
                    throw DeadlineExceeded()
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw DeadlineExceeded() }
                return first
            }
        } catch is DeadlineExceeded {
            throw NetworkFailure(description: "cannot reach \(request.url): no complete answer within \(timeout) s")
        } catch is NIOTooManyBytesError {
            throw NetworkFailure(description: "\(request.url) answered with more than \(limit) bytes; refused")
        } catch {
            throw NetworkFailure(description: "cannot reach \(request.url): \(await failureReason(error, url: request.url))")
        }
    }

    /// The answer to a download that may be long (an attachment): a 200 or 206 streams its body
    /// to `onBody` in pieces of ``batchBytes`` (at most `limit` bytes in all; the last piece, and
    /// the bytes before a break, may be shorter), any other status collects a small body
    /// for its refusal. A relay silent for ``ClientLimits/readSeconds`` ends it; the whole
    /// download may take up to `timeout` seconds.
    /// - Returns: the status, and for a refusal its body.
    /// - Throws: ``NetworkFailure`` (unreachable, silent, cut off), ``WireError/objectMismatch(_:)``
    ///   for more than `limit` bytes, or what `onBody` throws.
    static func stream(
        _ request: PreparedRequest, limit: UInt64, timeout: Int64 = 3_600, onHead: (_ status: Int, _ contentLength: String?) throws -> Void,
        onArrival: (Int) throws -> Void = { _ in }, onBody: (UnsafeRawBufferPointer) throws -> Void
    ) async throws -> HTTPResult {
        var http = HTTPClientRequest(url: request.url)
        http.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        let response: HTTPClientResponse
        try checkTrust(request.url)
        do {
            response = try await client.execute(http, deadline: .now() + .seconds(timeout))
        } catch {
            throw NetworkFailure(description: "cannot reach \(request.url): \(await failureReason(error, url: request.url))")
        }
        let status = Int(response.status.code)
        guard status == 200 || status == 206 else {
            let body = try? await response.body.collect(upTo: ClientLimits.smallAnswerBytes)  // nil: the refusal is told by its status alone
            return HTTPResult(status: status, body: body.map { Array($0.readableBytesView) } ?? [], retryAfter: response.headers.first(name: "Retry-After"))
        }
        try onHead(status, response.headers.first(name: "Content-Length"))
        var taken: UInt64 = 0
        // The body goes to the core in pieces of `batchBytes`: fewer, larger calls.
        var batch = ByteBuffer()
        batch.reserveCapacity(Self.batchBytes)
        func flush() throws {
            guard batch.readableBytes > 0 else { return }
            defer { batch.clear() }
            try batch.withUnsafeReadableBytes(onBody)
        }
        do {
            for try await buffer in response.body {
                taken = taken.addingSaturating(UInt64(buffer.readableBytes))
                try onArrival(buffer.readableBytes)  // the host's pace check, per network read
                // Longer than asked for is refused at once (PROTOCOL.md §12.5), never tried again.
                guard taken <= limit else {
                    try flush()  // wrong bytes before the excess are named as such
                    throw WireError.objectMismatch("the relay sent more than the \(limit) bytes asked for")
                }
                var piece = buffer
                batch.writeBuffer(&piece)
                if batch.readableBytes >= Self.batchBytes { try flush() }
            }
            try flush()
        } catch let failure as NetworkFailure {
            throw failure
        } catch let refusal as WireError {
            throw refusal  // the bytes were wrong: not a network failure, never retried
        } catch let failure as CLIFailure {
            throw failure  // the local file could not be written
        } catch {
            try flush()  // the bytes that arrived before the break are kept: the next request resumes after them
            throw NetworkFailure(description: "the download from \(request.url) broke off: \(networkReason(error))")
        }
        return HTTPResult(status: status, body: [])
    }

    /// How many body bytes ``stream(_:limit:timeout:onHead:onBody:)`` hands on at once (1 MiB).
    static let batchBytes = 1_048_576

    static func networkReason(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") { return "timed out" }
        if text.contains("Connection refused") || text.contains("connection refused") { return "connection refused" }
        if text.contains("handshakeFailed") || text.contains("WRONG_VERSION_NUMBER") {
            return "the TLS handshake failed (if the relay serves plain http, use an http:// server URL)"
        }
        return text.count > 160 ? String(text.prefix(160)) + "…" : text
    }

    /// A sentence for a relay's refusal, with advice.
    static func refusal(_ result: HTTPResult, action: String) -> String {
        let error = RelayAPI.error(status: result.status, body: result.body)
        guard case .relayError(let status, let code, let message) = error else { return error.description }
        let advice: String
        let aboutTime = code == "timestamp_too_old" || code == "timestamp_in_future" || message.contains("timestamp")
        switch (status, code) {
        case (401, _) where aboutTime: advice = " — check this computer's clock"
        case (401, _): advice = " — the relay did not accept the signature"
        case (409, _): advice = " — the relay already has a newer upload from you"
        case (413, _): advice = " — too many friends for one upload"
        case (429, _): advice = " — the relay is rate limiting; try again later"
        case (500..<600, _): advice = " — the relay has a problem; try again later"  // callers that queue say so themselves
        default: advice = ""
        }
        return "the relay refused to \(action) (\(status)\(code.map { " \(Terminal.safe($0))" } ?? "")): \(Terminal.safe(message))\(advice)"
    }
}
