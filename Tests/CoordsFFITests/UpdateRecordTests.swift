import Foundation
import Testing

@testable import CoordsCore
@testable import CoordsFFI

/// The JSON record of every manager update (`coords_app_next_update`, the update callback),
/// pinned byte for byte, and checked against the list of update types in docs/ABI.md.
@Suite struct UpdateRecordTests {
    static let key = "ERERERERERERERERERERERERERERERERERERERERERE"
    static let location = Location(unvalidatedLatitude: 47.5, longitude: 8.25, altitude: 400, accuracy: 5, timestamp: 1_700_000_000_000)

    static func friend() throws -> Friend {
        let record = FriendRecord(
            name: "Bob", server: "https://relay.example", shareWith: true, fetchFrom: false, addedAt: 1_700_000_000_001, x25519PublicKey: "",
            trust: .verified)
        var friend = Friend(key: try Ed25519SigningKey(seed: [UInt8](repeating: 0x11, count: 32)).publicKey, record: record, now: 0)
        (friend.id, friend.markerColor) = (key, "#1F77B4")
        return friend
    }

    static let friendJSON = """
        {"id":"\(key)","name":"Bob","server":"https://relay.example","share_with":true,"fetch_from":false,\
        "added_at":1700000000001,"trust":"verified","marker_color":"#1F77B4","sharing":"on","share_until":null,"conflict_keys":[],"protection":"legacy",\
        "reciprocal":false}
        """

    static let message = MessageRecord(
        id: "6f1e0b52-3c1a-4d55-9a43-0e8d0c1d2f3a", peer: key, outgoing: false, kind: "text", text: "hi", sentAt: 5, storedAt: 6,
        status: .received, disappearsAt: nil)
    static let messageJSON = """
        {"id":"6f1e0b52-3c1a-4d55-9a43-0e8d0c1d2f3a","friend_id":"\(key)","outgoing":false,"kind":"text","text":"hi",\
        "sent_at_ms":5,"stored_at_ms":6,"status":"received","disappears_at_ms":null,"group":null,"notify":null,"file":null}
        """

    /// Every case of every manager's message, with its record.
    static func cases() throws -> [(AppUpdate, String)] {
        let friendLocation = FriendLocation(
            id: key, name: "Bob", location: location, updated: 1_700_000_000, fetchedAt: 1_700_000_000_500, authenticity: .verified,
            markerColor: "#1F77B4")
        let friendLocationJSON = """
            {"id":"\(key)","name":"Bob","location":{"latitude":47.5,"longitude":8.25,"altitude_m":400,"accuracy_m":5,\
            "timestamp_ms":1700000000000},"updated":1700000000,"fetched_at":1700000000500,"authenticity":"verified",\
            "marker_color":"#1F77B4","place":null}
            """
        return [
            (.wallet(.identityCreated(id: "A")), #"{"manager":"wallet","type":"identity_created","id":"A"}"#),
            (.wallet(.identityImported(id: "A")), #"{"manager":"wallet","type":"identity_imported","id":"A"}"#),
            (.wallet(.backupRestored(id: "A", friendCount: 3)), #"{"manager":"wallet","type":"backup_restored","id":"A","friend_count":3}"#),
            (
                .wallet(.profileChanged(name: "Alice", server: "https://r")),
                #"{"manager":"wallet","type":"profile_changed","name":"Alice","server":"https://r"}"#
            ),
            (.wallet(.strictModeChanged(true)), #"{"manager":"wallet","type":"strict_mode_changed","strict_mode":true}"#),
            (
                .wallet(.identityRotated(from: "A", to: "B", revoked: false)),
                #"{"manager":"wallet","type":"identity_rotated","from":"A","to":"B","revoked":false}"#
            ),
            (.wallet(.errorOccurred(code: 101, message: "m")), #"{"manager":"wallet","type":"error_occurred","code":101,"message":"m"}"#),
            (.friends(.friendAdded(try friend())), #"{"manager":"friends","type":"friend_added","friend":"# + friendJSON + "}"),
            (.friends(.friendUpdated(try friend())), #"{"manager":"friends","type":"friend_updated","friend":"# + friendJSON + "}"),
            (.friends(.friendRemoved(id: "A")), #"{"manager":"friends","type":"friend_removed","id":"A"}"#),
            (.friends(.errorOccurred(code: 199, message: "m")), #"{"manager":"friends","type":"error_occurred","code":199,"message":"m"}"#),
            (
                .location(.uploadPrepared(fixTimestamp: 7, recipientCount: 2)),
                #"{"manager":"location","type":"upload_prepared","fix_timestamp":7,"recipient_count":2}"#
            ),
            (.location(.uploadSucceeded(fixTimestamp: 7)), #"{"manager":"location","type":"upload_succeeded","fix_timestamp":7}"#),
            (
                .location(.uploadFailed(fixTimestamp: 7, reason: "503")),
                #"{"manager":"location","type":"upload_failed","fix_timestamp":7,"reason":"503"}"#
            ),
            (.location(.fetchesPrepared(requestCount: 4)), #"{"manager":"location","type":"fetches_prepared","request_count":4}"#),
            (
                .location(.locationsUpdated([friendLocation])),
                #"{"manager":"location","type":"locations_updated","locations":["# + friendLocationJSON + "]}"
            ),
            (
                .location(.entryRejected(id: "A", code: 212, message: "m")),
                #"{"manager":"location","type":"entry_rejected","id":"A","code":212,"message":"m"}"#
            ),
            (.location(.errorOccurred(code: 1, message: "m")), #"{"manager":"location","type":"error_occurred","code":1,"message":"m"}"#),
            (.outbox(.queued(id: 9, kind: .upload)), #"{"manager":"outbox","type":"queued","id":9,"kind":"upload"}"#),
            (.outbox(.delivered(id: 9, kind: .upload)), #"{"manager":"outbox","type":"delivered","id":9,"kind":"upload"}"#),
            (
                .outbox(.retryScheduled(id: 9, attempts: 2, nextAttemptAt: 8)),
                #"{"manager":"outbox","type":"retry_scheduled","id":9,"attempts":2,"next_attempt_at":8}"#
            ),
            (.outbox(.removed(id: 9)), #"{"manager":"outbox","type":"removed","id":9}"#),
            (
                .outbox(.dropped(id: 9, kind: .delete, reason: "r")),
                #"{"manager":"outbox","type":"dropped","id":9,"kind":"delete","reason":"r"}"#
            ),
            (.outbox(.errorOccurred(code: 2, message: "m")), #"{"manager":"outbox","type":"error_occurred","code":2,"message":"m"}"#),
            (.messages(.messageQueued(message)), #"{"manager":"messages","type":"message_queued","message":"# + messageJSON + "}"),
            (.messages(.messageSent(id: "M")), #"{"manager":"messages","type":"message_sent","id":"M"}"#),
            (.messages(.messagesReceived([message])), #"{"manager":"messages","type":"messages_received","messages":["# + messageJSON + "]}"),
            (.messages(.messageDelivered(id: "M")), #"{"manager":"messages","type":"message_delivered","id":"M"}"#),
            (
                .messages(.messageRejected(id: "M", code: 3, message: "m")),
                #"{"manager":"messages","type":"message_rejected","id":"M","code":3,"message":"m"}"#
            ),
            (.messages(.messagesExpired(ids: ["M", "N"])), #"{"manager":"messages","type":"messages_expired","ids":["M","N"]}"#),
            (
                .messages(.disappearingChanged(friendID: "A", seconds: 60)),
                #"{"manager":"messages","type":"disappearing_changed","friend_id":"A","seconds":60}"#
            ),
            (
                .messages(.disappearingChanged(friendID: "A", seconds: nil)),
                #"{"manager":"messages","type":"disappearing_changed","friend_id":"A","seconds":null}"#
            ),
            (
                .messages(.friendRotated(from: "A", to: "B", name: "Bob")),
                #"{"manager":"messages","type":"friend_rotated","from":"A","to":"B","name":"Bob"}"#
            ),
            (.messages(.friendConflict(id: "A", name: "Bob")), #"{"manager":"messages","type":"friend_conflict","id":"A","name":"Bob"}"#),
            (.messages(.sessionReset(friendID: "A", name: "Bob")), #"{"manager":"messages","type":"session_reset","friend_id":"A","name":"Bob"}"#),
            (.messages(.errorOccurred(code: 4, message: "m")), #"{"manager":"messages","type":"error_occurred","code":4,"message":"m"}"#),
            (.groups(.joined(groupID: "G", name: "Trip", by: "A")), #"{"manager":"groups","type":"group_joined","group_id":"G","name":"Trip","by":"A"}"#),
            (
                .groups(.changed(groupID: "G", name: "Trip", epoch: 2, added: ["A"], removed: [], renamed: true)),
                #"{"manager":"groups","type":"group_changed","group_id":"G","name":"Trip","epoch":2,"added":["A"],"removed":[],"renamed":true}"#
            ),
            (.groups(.conflict(groupID: "G", name: "Trip")), #"{"manager":"groups","type":"group_conflict","group_id":"G","name":"Trip"}"#),
            (.groups(.removed(groupID: "G", name: "Trip")), #"{"manager":"groups","type":"group_removed","group_id":"G","name":"Trip"}"#),
            (.groups(.left(groupID: "G", name: "Trip")), #"{"manager":"groups","type":"group_left","group_id":"G","name":"Trip"}"#),
            (.groups(.sharingChanged(groupID: "G", sharing: true)), #"{"manager":"groups","type":"group_sharing_changed","group_id":"G","sharing":true}"#),
            (
                .groups(.statementRefused(groupID: "G", code: 662, message: "m")),
                #"{"manager":"groups","type":"group_statement_refused","id":"G","code":662,"message":"m"}"#
            ),
            (.groups(.errorOccurred(code: 5, message: "m")), #"{"manager":"groups","type":"error_occurred","code":5,"message":"m"}"#)
        ]
    }

    @Test func everyUpdateHasItsPinnedRecord() throws {
        for (update, expected) in try Self.cases() {
            #expect(Record.update(update).serializedString == expected, "\(update)")
        }
    }

    /// docs/ABI.md lists each manager's update types with their fields ("Update types: wallet
    /// `identity_created {id}`, …; every manager `error_occurred {code, message}`"): the records
    /// carry exactly those fields, and every listed type has a record.
    @Test func docsListEveryUpdateTypeWithItsFields() throws {
        let docs = try String(contentsOf: URL(fileURLWithPath: #filePath).appending(path: "../../../docs/ABI.md").standardized, encoding: .utf8)
        let start = try #require(docs.range(of: "Update types:"))
        let end = try #require(docs.range(of: "(the failure's", range: start.upperBound..<docs.endIndex))
        let text = docs[start.upperBound..<end.lowerBound].replacingOccurrences(of: "\n", with: " ")
        // Words outside backticks name the manager; each backticked `type {field, …}` is one update type.
        var documented: [String: [String]] = [:]
        var manager = ""
        for (index, part) in text.split(separator: "`", omittingEmptySubsequences: false).enumerated() {
            if index % 2 == 0 {
                if let word = part.split(whereSeparator: { !$0.isLetter }).last { manager = String(word) }
                continue
            }
            let type = String(part.prefix { $0 != " " })
            let fields = part.drop { $0 != "{" }.dropFirst().prefix { $0 != "}" }.split(separator: ",").map {
                String($0.split(separator: ":")[0].trimmingCharacters(in: .whitespaces))
            }
            documented["\(manager) \(type)"] = fields
        }
        var produced: [String: [String]] = [:]
        for (update, _) in try Self.cases() {
            let object = try #require(Record.update(update).objectValue)
            let manager = try #require(object["manager"]?.stringValue)
            let type = try #require(object["type"]?.stringValue)
            let fields = Array(object.keys.dropFirst(2))
            if type == "error_occurred" {
                #expect(fields == documented["manager error_occurred"], "\(manager)")
            } else {
                #expect(fields == documented["\(manager) \(type)"], "\(manager) \(type)")
                produced["\(manager) \(type)"] = fields
            }
        }
        documented["manager error_occurred"] = nil
        #expect(Set(produced.keys) == Set(documented.keys))
    }
}
