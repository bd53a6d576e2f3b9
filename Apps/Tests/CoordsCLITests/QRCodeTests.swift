import Foundation
import Testing

@testable import CoordsCLI

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
