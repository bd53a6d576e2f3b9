import Foundation
import Testing

@testable import CoordsCLI

/// Symbols from an independent encoder (python `qrcode` 7.4.2, scripts/make-qr-vectors.py):
/// every mask of versions 1–10, compared module by module.
@Suite struct QRCodeTests {
    struct Vectors: Decodable {
        struct Case: Decodable, Sendable, CustomTestStringConvertible {
            let text: String, version: Int, mask: Int, rows: [String]
            var testDescription: String { "v\(version) mask \(mask) \(text.prefix(20))" }
        }
        let cases: [Case]
    }

    static func vectors() throws -> [Vectors.Case] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/qr-vectors.json")
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url)).cases
    }

    @Test(arguments: try QRCodeTests.vectors())
    func matchesTheIndependentEncoder(_ v: Vectors.Case) throws {
        let code = try QRCode(text: v.text, version: v.version, mask: v.mask)
        #expect(code.size == v.rows.count)
        let rows = (0..<code.size).map { y in String((0..<code.size).map { code.isDark(x: $0, y: y) ? "1" : "0" }) }
        #expect(rows == v.rows)
    }

    @Test func picksTheSmallestVersionAndAValidMask() throws {
        let link = "coord://coord.is/add/wrZlO17X0knD6RWU6jrrS_ZGltdaftqAJs7yA4RsQdE#Bob"
        let code = try QRCode(text: link)
        #expect(code.version == 5)  // 71 bytes: version 4-M holds 62, 5-M holds 84
        #expect((0...7).contains(code.mask))
        #expect(try QRCode(text: link, version: 5, mask: code.mask) == code)
    }

    @Test func refusesWhatDoesNotFit() {
        #expect(throws: QRCode.Failure.tooLong(bytes: 214, maximum: 213)) { try QRCode(text: String(repeating: "z", count: 214)) }
        #expect(throws: QRCode.Failure.tooLong(bytes: 20, maximum: 14)) { try QRCode(text: String(repeating: "z", count: 20), version: 1) }
        #expect(throws: QRCode.Failure.invalidVersion(11)) { try QRCode(text: "a", version: 11) }
        #expect(throws: QRCode.Failure.invalidMask(8)) { try QRCode(text: "a", mask: 8) }
        #expect(throws: Never.self) { try QRCode(text: "") }
    }

    @Test func rendersWithAQuietZone() throws {
        let code = try QRCode(text: "Coords", version: 1, mask: 0)
        let plain = code.render(ansi: false, quietZone: 2)
        let lines = plain.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 21 + 4)
        #expect(lines.allSatisfy { $0.count == (21 + 4) * 2 })
        #expect(lines[2].hasPrefix("    ##############"))  // quiet zone, then the finder's top row
        let ansi = code.render(ansi: true)
        #expect(ansi.contains("\u{1b}[") && ansi.split(separator: "\n").count == 13)
    }
}

@Suite struct OutputTests {
    @Test func ages() {
        let now: UInt64 = 10_000_000
        #expect(age(since: now - 12_000, now: now) == "12 s")
        #expect(age(since: now - 300_000, now: now) == "5 min")
        #expect(age(since: now - 7_200_000, now: now) == "2 h")
        #expect(age(since: now + 1, now: now) == "in the future")
    }

    @Test func tablesAlignColumns() {
        var table = TextTable("NAME", "AGE")
        table.add("Alice", "5 s")
        table.add("Bo", "12 min")
        #expect(table.render() == "NAME   AGE\nAlice  5 s\nBo     12 min")
    }

    @Test func locationsHaveFiveDecimalsAndAccuracy() throws {
        #expect(describe(try .init(latitude: 47.3769, longitude: 8.5, accuracy: 12.7, timestamp: 1)) == "47.37690, 8.50000 ±12 m")
        #expect(describe(try .init(latitude: -33.86882, longitude: 151.20929, timestamp: 1)) == "-33.86882, 151.20929")
    }
}
