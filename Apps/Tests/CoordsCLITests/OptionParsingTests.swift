import ArgumentParser
import Testing

@testable import CoordsCLI

/// Issue 38, problem 3: negative numbers and dash-leading ids are option values, not options.
/// `--lon -9.14` used to be "Missing value for '--lon'" (half the planet has a negative
/// coordinate), and `--key` with an id starting with `-` (1 id in 64) was refused the same way.
@Suite struct OptionParsingTests {
    @Test func negativeCoordinatesAndAltitudeAreValues() throws {
        let share = try Share.parse(["--lat", "-33.8688", "--lon", "-9.14", "--alt", "-430"])
        #expect(share.lat == -33.8688 && share.lon == -9.14 && share.alt == -430)
        let watch = try Watch.parse(["--lat", "-0.5", "--lon", "-179.99"])
        #expect(watch.lat == -0.5 && watch.lon == -179.99)
        // The `=` form keeps working.
        let equals = try Share.parse(["--lat=-1", "--lon=-2"])
        #expect(equals.lat == -1 && equals.lon == -2)
    }

    @Test func aKeyStartingWithADashIsAValue() throws {
        let id = "-Xk0d9QeJpV4m3Lw0bH8cN7tY2uR5sA1fG6hJ9kL0zQ"
        let verify = try Verify.parse(["Bob", "--key", id])
        #expect(verify.key == id && verify.friend == "Bob")
    }

    @Test func aMissingOrNonNumericValueIsStillAClearError() {
        #expect(throws: (any Error).self) { try Share.parse(["--lat", "1", "--lon"]) }
        do {
            _ = try Share.parse(["--lat", "north", "--lon", "2"])
            Issue.record("a non-numeric latitude parsed")
        } catch {
            let message = Share.message(for: error)
            #expect(message.contains("north") && message.contains("--lat"), "\(message)")
        }
    }
}
