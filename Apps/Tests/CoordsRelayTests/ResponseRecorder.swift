import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization

/// Appends every response the relay suites receive to the file named by
/// `COORDS_OPENAPI_RECORD` (one JSON object per line), so `scripts/openapi-check.py` can hold
/// each one against docs/openapi.yaml after the run (`make test-swift` sets the variable).
final class ResponseRecorder: Sendable {
    static let shared = ResponseRecorder(path: ProcessInfo.processInfo.environment["COORDS_OPENAPI_RECORD"])

    private let descriptor: Mutex<Int32>

    private init(path: String?) {
        descriptor = Mutex(path.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) } ?? -1)
    }

    /// Records one exchange (nothing when recording is off).
    func record(method: HTTPRequest.Method, uri: String, response: TestResponse) {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            var headers = JSONObject()
            for field in response.headers { headers[field.name.canonicalName] = .string(field.value) }
            let line =
                JSONValue.object([
                    "method": .string(method.rawValue), "uri": .string(uri), "status": .integer(UInt64(response.status.code)),
                    "headers": .object(headers), "body": .string(String(decoding: response.body.readableBytesView, as: UTF8.self))
                ]).serialized() + [0x0A]
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }
}

/// A test client that records what it receives (``ResponseRecorder``).
struct RecordingClient: TestClientProtocol {
    let inner: any TestClientProtocol

    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestResponse {
        let response = try await inner.executeRequest(uri: uri, method: method, headers: headers, body: body)
        ResponseRecorder.shared.record(method: method, uri: uri, response: response)
        return response
    }

    var port: Int? { inner.port }
}

/// The relay application with its test clients recording (``RecordingClient``).
struct RecordedApplication<Inner: ApplicationProtocol> {
    let inner: Inner

    func test<Value>(_ setup: TestingSetup, _ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await inner.test(setup) { client in try await body(RecordingClient(inner: client)) }
    }
}
