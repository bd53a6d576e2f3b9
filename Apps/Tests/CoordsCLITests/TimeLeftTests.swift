import Testing

@testable import CoordsCLI

/// Issue 38, problem 10: a share made "--for 2h" said "1 h left" a moment later (the time left
/// was shown like an age, rounded down).
@Suite struct TimeLeftTests {
    @Test func rightAfterSharingForTwoHoursItSaysTwoHours() {
        let now: UInt64 = 1_764_000_000_000
        #expect(timeLeft(until: now + 2 * 3_600_000, now: now + 5) == "2 h")
        #expect(timeLeft(until: now + 90 * 60_000, now: now + 1) == "1 h 30 min")
        #expect(timeLeft(until: now + 45 * 60_000 - 30_000, now: now) == "45 min")
        #expect(timeLeft(until: now + 30_000, now: now) == "30 s")
        #expect(timeLeft(until: now + 29_001, now: now) == "30 s")
        #expect(timeLeft(until: now + (2 * 24 + 3) * 3_600_000, now: now) == "2 d 3 h")
        #expect(timeLeft(until: now, now: now + 1) == "0 s")
        #expect(timeLeft(until: UInt64.max, now: 0).hasSuffix(" h") || timeLeft(until: UInt64.max, now: 0).hasSuffix(" d"))
    }
}
