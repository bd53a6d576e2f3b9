import CoordsCore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How the relay writes its log lines to standard error (`--log-format`).
public enum RelayLogFormat: String, Sendable, CaseIterable {
    /// swift-log's plain text lines (`2026-11-23T19:00:00+0000 info coords.relay : key=value message`).
    case text
    /// One JSON object per line with the stable keys `ts`, `level`, `logger`, `msg`, then the
    /// metadata keys (strings), e.g. `{"ts":"2026-11-23T19:00:00.123Z","level":"info",
    /// "logger":"coords.relay","msg":"request","method":"PUT","route":"/api/location",…}`.
    case json

    /// The handler factory to pass to `LoggingSystem.bootstrap` (called once per process).
    public var factory: @Sendable (String) -> any LogHandler {
        switch self {
        case .text: return { StreamLogHandler.standardError(label: $0) }
        case .json: return { JSONLogHandler(label: $0) }
        }
    }
}

/// A swift-log handler writing one JSON object per line to standard error. Each line is one
/// `write(2)` under a process-wide lock, so lines from concurrent requests never interleave.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    private let sink: @Sendable ([UInt8]) -> Void

    /// A handler for `label` writing to standard error.
    public init(label: String) {
        self.init(label: label, sink: JSONLogHandler.standardError)
    }

    /// A handler writing each finished line (with its newline) to `sink`; for tests.
    public init(label: String, sink: @escaping @Sendable ([UInt8]) -> Void) {
        self.label = label
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var object = JSONObject([
            ("ts", .string(Self.timestamp())), ("level", .string(event.level.rawValue)),
            ("logger", .string(label)), ("msg", .string(event.message.description))
        ])
        for key in merged.keys.sorted() where object[key] == nil {
            object[key] = .string(merged[key].map { "\($0)" } ?? "")
        }
        sink(JSONValue.object(object).serialized() + [0x0A])
    }

    private static let lock = Mutex(())

    @Sendable private static func standardError(_ line: [UInt8]) {
        lock.withLock { _ in
            var offset = 0
            while offset < line.count {
                let n = line.withUnsafeBytes { write(2, $0.baseAddress?.advanced(by: offset), line.count - offset) }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    /// UTC with milliseconds: `2026-11-23T19:00:00.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(now.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : (millis < 100 ? "0\(millis)" : "\(millis)")
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }
}
