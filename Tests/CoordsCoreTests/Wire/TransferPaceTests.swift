import Testing

@testable import CoordsCore

/// Issue 59, defect 6: one bounded rule for uploads and downloads. A relay that drips its answer,
/// or answers busy with `Retry-After: 3600` again and again, can no longer keep a host waiting for
/// hours: the attack's numbers (1 byte every 10 s; 14 answers of 503 with `Retry-After: 3600`).
@Suite struct TransferPaceTests {
    @Test func aDrippingAnswerIsCutOffAtTheEndOfItsFirstWindow() {
        var now: UInt64 = 1_000_000
        var pace = TransferPace(bytes: 1_000_000, now: now)
        pace.beginAnswer(now: now)
        var cutAt: UInt64?
        for _ in 0..<10 {
            now += 10_000
            if !pace.took(1, now: now) {
                cutAt = now
                break
            }
        }
        #expect(cutAt == 1_000_000 + TransferPace.windowSeconds * 1000)
        // A steady answer is never cut.
        pace.beginAnswer(now: now)
        for _ in 0..<100 {
            now += 1_000
            let kept = pace.took(4_096, now: now)
            #expect(kept)
        }
    }

    @Test func busyAnswersWaitAtMostAMinuteAndGiveUpWithinTheBound() {
        var now: UInt64 = 0
        var pace = TransferPace(bytes: 150_000, now: now)
        var waited: UInt64 = 0
        var tries = 0
        while case .wait(let seconds) = pace.failed(progressed: false, retryAfter: 3_600, now: now) {
            #expect(seconds <= TransferPace.maximumWaitSeconds)
            waited += seconds
            now += seconds * 1000
            tries += 1
        }
        // 14 answers of Retry-After: 3600 in the attack; here at most a minute each, within the deadline.
        #expect(tries > 0 && tries <= TransferPace.attempts - 1)
        #expect(waited <= TransferPace.limitSeconds(bytes: 150_000))
        // Without Retry-After the pauses (1, 2, 4 … 30 s) run out the attempts first.
        var quiet = TransferPace(bytes: 150_000, now: 0)
        var count = 0
        var clock: UInt64 = 0
        while case .wait(let seconds) = quiet.failed(progressed: false, now: clock) {
            clock += seconds * 1000
            count += 1
        }
        #expect(count == TransferPace.attempts - 1 && clock == 271_000)
        // Progress starts the count again; the deadline still ends everything.
        var long = TransferPace(bytes: 0, now: 0)
        for _ in 0..<(TransferPace.attempts - 2) { _ = long.failed(progressed: false, now: 0) }
        let afterProgress = long.failed(progressed: true, now: 0)
        #expect(afterProgress == .wait(seconds: 1))
        #expect(long.failures == 1)
        let late = TransferPace.baseSeconds * 1000 - 500
        guard case .giveUp(let reason) = long.failed(progressed: true, now: late) else {
            Issue.record("a wait past the deadline was allowed")
            return
        }
        #expect(reason.contains("deadline"))
        let afterDeadline = long.took(100_000, now: TransferPace.baseSeconds * 1000)
        #expect(!afterDeadline)
    }

    @Test func pausesAndBoundsAreTheStatedOnes() {
        #expect((1...8).map(TransferPace.pause(afterFailures:)) == [1, 2, 4, 8, 16, 30, 30, 30])
        #expect(TransferPace.pause(afterFailures: Int.max) == 30 && TransferPace.pause(afterFailures: Int.min) == 1)
        #expect(TransferPace.limitSeconds(bytes: 0) == 600)
        #expect(TransferPace.limitSeconds(bytes: Objects.maximumStored) == 600 + Objects.maximumStored / 8_192)
        #expect(TransferPace.limitSeconds(bytes: .max) > 0)
        let pace = TransferPace(bytes: .max, now: .max - 5)
        #expect(pace.deadline == .max && pace.secondsLeft(now: .max) == 1)
        #expect(ObjectDownload.retryDelay("3600") == 60 && ObjectDownload.retryDelay("0") == 1 && ObjectDownload.retryDelay(nil) == 5)
    }
}
