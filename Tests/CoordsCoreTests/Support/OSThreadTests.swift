import Testing

@testable import CoordsCore

@Suite struct OSThreadTests {
    @Test func aJoinedThreadHasRunItsBodyOnAnotherThread() throws {
        let handles = Channel.bounded(1, of: OSThread.self)
        let answers = Channel.bounded(1, of: Bool.self)
        let thread = try OSThread.start {
            // The body learns its own handle from the starter, then asks whether it is the caller.
            guard let me = try? handles.receiver.recv(timeout: .seconds(30)) else { return }
            try? answers.sender.send(me.isCurrent)
        }
        #expect(!thread.isCurrent)
        try handles.sender.send(thread)
        thread.join()
        #expect(try answers.receiver.tryRecv() == true)
    }

    @Test func aDetachedThreadFinishesOnItsOwn() throws {
        let done = Channel.bounded(1, of: Int.self)
        try OSThread.start { try? done.sender.send(42) }.detach()
        #expect(try done.receiver.recv(timeout: .seconds(30)) == 42)
    }
}
