import Foundation
import Logging
import Testing

@testable import CoordsCore

/// The C header lists every error code the library can return: each case of every error enum
/// must appear there as a `#define COORDS_ERR_… <code>` (the C ABI passes codes through unchanged).
@Suite struct HeaderCodesTests {
    static let allErrors: [any CoordsCoreError] = [
        CryptoError.libraryInitializationFailed, CryptoError.unsupportedHardware, CryptoError.invalidKeyLength(what: "", expected: 0, actual: 0),
        CryptoError.invalidPublicKey, CryptoError.invalidNonceLength(expected: 0, actual: 0), CryptoError.authenticationFailed,
        CryptoError.ciphertextTooShort(minimum: 0, actual: 0), CryptoError.weakPublicKey, CryptoError.invalidParameter(""),
        CryptoError.randomSourceMismatch(""), CryptoError.outOfMemory(""),
        WireError.invalidLocation(""), WireError.invalidWireLocationLength(0), WireError.blobTooShort(actual: 0, minimum: 0),
        WireError.unsupportedBlobVersion(0), WireError.blobTruncated(entryCount: 0, required: 0, actual: 0), WireError.notARecipient,
        WireError.invalidEphemeralKey, WireError.blobDataTampered, WireError.invalidLocationPlaintext(length: 0),
        WireError.tooManyRecipients(count: 0, maximum: 0), WireError.noRecipients, WireError.invalidRecipientKey(index: 0),
        WireError.invalidBase64(field: ""), WireError.invalidLength(field: "", expected: 0, actual: 0), WireError.invalidJSON(""),
        WireError.unexpectedJSON(""), WireError.invalidServerURL(""), WireError.invalidPublicKeyID(""), WireError.tamperedEntry(id: ""),
        WireError.unverifiedEntry(id: ""), WireError.rollback(id: "", cachedTimestamp: 0, fetchedTimestamp: 0),
        WireError.relayError(status: 0, code: nil, message: ""), WireError.staleLocation(timestamp: 0, lastUploaded: 0),
        WireError.invalidFriendLink(""), WireError.invalidEnvelope(""), WireError.envelopeSignatureInvalid, WireError.envelopeNotForMe,
        WireError.envelopeExpired(expiresAt: 0), WireError.envelopeTampered,
        WireError.invalidPrekeyBundle(""), WireError.prekeyBundleExpired(expires: 0), WireError.malformedSessionMessage(""),
        WireError.unknownPrekey(""), WireError.replayedHandshake, WireError.duplicateMessage, WireError.tooManySkipped(gap: 0),
        WireError.sessionBroken, WireError.downgradeRefused, WireError.prekeysUnavailable,
        WireError.malformedGroupStatement(""), WireError.groupSignatureInvalid, WireError.malformedGroupMessage(""),
        WireError.malformedFile(""), WireError.badChunk(index: 0), WireError.objectMismatch(""),
        QRCode.Failure.tooLong(bytes: 0, maximum: 0),
        StoreError.openFailed(path: "", LMDBCode.notFound), StoreError.alreadyOpen(path: ""), StoreError.mapFull(mapSize: 0, maximumMapSize: 0),
        StoreError.corrupted(.corrupted), StoreError.storage(operation: "", LMDBCode.notFound), StoreError.closed, StoreError.unknownTable(""),
        StoreError.tableTypeMismatch(table: "", stored: "", requested: ""), StoreError.tooManyTables(0), StoreError.transactionClosed,
        StoreError.nestedWrite, StoreError.decodingFailed(table: "", type: "", reason: ""), StoreError.encodingFailed(type: "", reason: ""),
        StoreError.invalidKeySize(size: 0, maximum: 0), StoreError.schemaTooNew(stored: 0, supported: 0),
        StoreError.migrationFailed(from: 0, to: 0, reason: ""),
        ChannelError.empty, ChannelError.full, ChannelError.disconnected, ChannelError.timedOut, ChannelError.cancelled,
        WalletManagerError.noIdentity, WalletManagerError.identityExists(id: ""), WalletManagerError.invalidBackup(""), WalletManagerError.wrongPassphrase,
        WalletManagerError.unsupportedBackupVersion(0), WalletManagerError.noServer,
        FriendsManagerError.notFound(id: ""), FriendsManagerError.cannotAddSelf,
        LocationManagerError.unknownUpload(fixTimestamp: 0), LocationManagerError.fixInFuture(fixTimestamp: 0, now: 0),
        KeychainError.wrongPassphrase, KeychainError.corrupted(""), KeychainError.io(operation: "", errno: 0), KeychainError.invalidName(""),
        KeychainError.hostFailure(code: 0, message: ""),
        MessagesManagerError.friendBlocked(id: ""), MessagesManagerError.messageTooLong(bytes: 0, maximum: 0),
        MessagesManagerError.invalidMailboxResponse(""), MessagesManagerError.invalidQuietHours(""), MessagesManagerError.unknownConversation(""),
        MessagesManagerError.unknownMessage(""), MessagesManagerError.noAttachment(""),
        GroupsManagerError.waitingDropped(""),
        GroupsManagerError.notFound(id: ""), GroupsManagerError.notAMember(id: ""), GroupsManagerError.notAnAdmin(id: ""),
        GroupsManagerError.tooManyGroups(maximum: 0), GroupsManagerError.invalidMembers(""), GroupsManagerError.messageTooLong(bytes: 0, maximum: 0),
        GroupsManagerError.notInvited(""), GroupsManagerError.staleStatement(epoch: 0), GroupsManagerError.forkLimit(epoch: 0),
        GroupsManagerError.unknownChain(""), GroupsManagerError.chainConflict(""), GroupsManagerError.stillMember(id: ""),
        GeocodingError.invalidCoordinate(""), GeocodingError.damagedData(""), GeocodingError.unsupportedVersion(0),
        GeocodingError.unreadableFile(path: "", reason: ""),
        InternalError(CancellationError())
    ]

    @Test func everyErrorCodeIsDefinedInTheHeader() throws {
        let header = try String(contentsOf: Fixtures.repositoryRoot.appendingPathComponent("include/coordscore.h"), encoding: .utf8)
        var defined: [Int32: String] = [:]
        for line in header.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 3, parts[0] == "#define", parts[1].hasPrefix("COORDS_ERR_"), let code = Int32(parts[2]) else { continue }
            #expect(defined[code] == nil, "code \(code) is defined twice")
            defined[code] = String(parts[1])
        }
        for error in Self.allErrors {
            #expect(defined[error.code] != nil, "\(type(of: error)) code \(error.code) (\(error)) is missing from include/coordscore.h")
            #expect(!error.description.isEmpty)
        }
        #expect(defined[InternalError.code] == "COORDS_ERR_INTERNAL")
        // Codes are unique per meaning across the enums.
        let codes = Self.allErrors.map(\.code)
        #expect(Set(codes).count == codes.count)
    }

    /// Regression: a manager action failing with an error from outside CoordsCore was reported
    /// with code 0 — `COORDS_OK` at the C ABI, so a host saw a failure as a success.
    @Test func aForeignErrorInAManagerIsReportedAsInternalNeverAsZero() throws {
        struct Foreign: Error {}
        let channel = ReconcileChannel<TestReconcileMessage>(capacity: 8, doorbell: Doorbell())
        let reconciler = Reconciler(channel: channel, logger: Logger(label: "test"))
        reconciler.reportingFailure { throw Foreign() }
        reconciler.reportingFailure { throw WireError.noRecipients }
        let reported: [(code: Int32, message: String)] = channel.receiver.drain().compactMap {
            if case .errorOccurred(let code, let message) = $0 { (code, message) } else { nil }
        }
        #expect(reported.map(\.code) == [InternalError.code, WireError.noRecipients.code])
        #expect(reported.first?.message.contains("Foreign") == true && InternalError.code != 0)
        #expect(Foreign().coordsCode == 199 && CancellationError().coordsCode == 199 && WireError.noRecipients.coordsCode == 318)
    }
}
