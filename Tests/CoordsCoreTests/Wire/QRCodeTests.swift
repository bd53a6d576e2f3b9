import Foundation
import Testing

@testable import CoordsCore

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
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../KnownAnswers/qr-vectors.json")
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

    @Test func anSVGDrawsEveryDarkModuleAndRefusalsHaveTheirCode() throws {
        let code = try QRCode(text: "Coords", version: 1, mask: 0)
        let svg = code.svg(modulePixels: 2, quietZone: 4)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"58\" height=\"58\""))
        #expect(svg.components(separatedBy: "h2v2h-2z").count - 1 == code.modules.filter { $0 }.count)
        #expect(svg.contains("M8 8h2v2h-2z"))  // the top-left finder's corner, after the quiet zone
        #expect(code.render(ansi: false, quietZone: -5) == code.render(ansi: false, quietZone: 0))  // never a reversed range
        #expect(QRCode.Failure.tooLong(bytes: 300, maximum: 213).code == 399)
    }
}
