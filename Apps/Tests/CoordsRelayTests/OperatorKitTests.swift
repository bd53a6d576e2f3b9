import CoordsCore
import Logging
import Synchronization
import Testing

@testable import CoordsRelay

/// The pieces of the operator's kit that can be tested in process: JSON log lines and the
/// /proc parsing behind the process metrics (the e2e suite runs them in a real relay).
@Suite struct OperatorKitTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ bytes: [UInt8]) { lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
    }

    @Test func jsonLogLinesHaveStableKeysFirstAndEscapeEverything() throws {
        let sink = Lines()
        var logger = Logger(label: "coords.relay") { JSONLogHandler(label: $0, sink: sink.append) }
        logger.logLevel = .debug
        logger[metadataKey: "node"] = "a"
        logger.info("quote \" backslash \\ newline \n tab \t", metadata: ["zeta": "1", "alpha": "\u{1}", "node": "b"])
        logger.trace("not at debug level")
        let lines = sink.lines.withLock { $0 }
        try #require(lines.count == 1)
        let line = lines[0]
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)  // one line, whatever the message holds
        let object = try #require(try JSONValue.parse(Array(line.utf8)).objectValue)
        #expect(object.keys == ["ts", "level", "logger", "msg", "alpha", "node", "zeta"])
        #expect(object["level"]?.stringValue == "info" && object["logger"]?.stringValue == "coords.relay")
        #expect(object["msg"]?.stringValue == "quote \" backslash \\ newline \n tab \t")
        #expect(object["alpha"]?.stringValue == "\u{1}" && object["node"]?.stringValue == "b")  // the event's metadata wins
        let ts = try #require(object["ts"]?.stringValue)
        #expect(ts.count == 24 && ts.hasSuffix("Z") && ts.dropFirst(10).first == "T")
    }

    @Test func reservedKeysInMetadataDoNotReplaceTheStableOnes() throws {
        let sink = Lines()
        let logger = Logger(label: "x") { JSONLogHandler(label: $0, sink: sink.append) }
        logger.info("real", metadata: ["msg": "forged", "level": "critical", "ts": "0"])
        let object = try #require(try JSONValue.parse(Array(sink.lines.withLock { $0[0] }.utf8)).objectValue)
        #expect(object["msg"]?.stringValue == "real" && object["level"]?.stringValue == "info" && object["ts"]?.stringValue != "0")
    }

    @Test func procStatParsingSurvivesHostileNamesAndTruncation() {
        let fields = (3...30).map { String($0 * 10) }.joined(separator: " ")
        let parsed = ProcessMetrics.parseStat("1234 (a) b) (c) \(fields)")
        #expect(parsed?.userTicks == 140 && parsed?.systemTicks == 150 && parsed?.startTicks == 220)
        #expect(parsed?.virtualBytes == 230 && parsed?.residentPages == 240)
        for hostile in [
            "", ")", "(", "1 (x", "1 (x) S 1 2", "1 (x) " + String(repeating: "9", count: 400), "1 (x) a b c d e f g h i j k l m n o p q r s t u v w"
        ] {
            #expect(ProcessMetrics.parseStat(hostile) == nil, "\(hostile.prefix(20))")
        }
        #expect(ProcessMetrics.format(12) == "12" && ProcessMetrics.format(0.5) == "0.5" && ProcessMetrics.format(1e300) == "1e+300")
        #expect(!ProcessMetrics.exposition().isEmpty)  // this machine has /proc
    }
}
