import Foundation
import Testing

/// The vector files under Tests/CoordsCoreTests/Vectors must be unchanged copies of the
/// independent implementation's files in ../shared/vectors (DESIGN.md, "Tests").
@Suite struct VectorCopyTests {
    static let shared = Fixtures.repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared").appendingPathComponent("vectors")

    @Test(.enabled(if: FileManager.default.fileExists(atPath: shared.path), "../shared/vectors is not present on this machine"))
    func copiesAreByteIdenticalToSharedVectors() throws {
        var names = try FileManager.default.contentsOfDirectory(atPath: Self.shared.path).filter { $0.hasSuffix(".json") }.sorted()
        let wycheproof = Self.shared.appendingPathComponent("wycheproof")
        if FileManager.default.fileExists(atPath: wycheproof.path) {
            names += try FileManager.default.contentsOfDirectory(atPath: wycheproof.path).sorted().map { "wycheproof/" + $0 }
        }
        #expect(!names.isEmpty)
        for name in names {
            let original = try Data(contentsOf: Self.shared.appendingPathComponent(name))
            let copy = try Data(contentsOf: Fixtures.vectorsDirectory.appendingPathComponent(name))
            #expect(copy == original, "Tests/CoordsCoreTests/Vectors/\(name) differs from ../shared/vectors/\(name); copy it again, never edit it")
        }
    }

    @Test func everyVectorFileIsPresentAndParses() throws {
        for name in ["standard.json", "coords-v3.json", "envelope-v2.json"] {
            let data = try Data(contentsOf: Fixtures.vectorsDirectory.appendingPathComponent(name))
            #expect(try JSONSerialization.jsonObject(with: data) is [String: Any])
        }
    }
}
