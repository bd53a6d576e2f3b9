import Testing

@testable import CoordsCore

/// The update spine: one list of every manager's channel, walked in registration order.
@Suite(.timeLimit(TestTimeLimit.minutes)) struct UpdateSpineTests {
    @Test func nextWalksTheChannelsInRegistrationOrderAndCloseEndsThemAll() throws {
        let spine = UpdateSpine(capacity: 4)
        let wallet: ReconcileChannel<WalletManagerReconcileMessage> = spine.channel(as: AppUpdate.wallet)
        let outbox: ReconcileChannel<OutboxManagerReconcileMessage> = spine.channel(as: AppUpdate.outbox)
        #expect(spine.next() == nil && !spine.isFinished)
        try outbox.sender.trySend(.removed(id: 1))
        try wallet.sender.trySend(.strictModeChanged(true))
        let generation = spine.doorbell.generation
        #expect(spine.next() == .wallet(.strictModeChanged(true)))  // registered first, served first
        #expect(spine.next() == .outbox(.removed(id: 1)))
        #expect(spine.next() == nil)
        try wallet.sender.trySend(.strictModeChanged(false))
        #expect(spine.doorbell.generation != generation)  // every channel rings the one doorbell
        spine.close()
        #expect(!spine.isFinished)  // a queued message is still delivered after close
        #expect(spine.next() == .wallet(.strictModeChanged(false)))
        #expect(spine.isFinished)
        #expect(throws: TrySendError<OutboxManagerReconcileMessage>.self) { try outbox.sender.trySend(.removed(id: 2)) }
    }
}
