/// Quiet hours: a daily window of the user's local time in which no message notifies.
///
/// The core keeps time in UTC; the host supplies the user's offset from UTC (and sets it again
/// when the time zone or daylight saving time changes). A window whose end is before its start
/// runs over midnight (22:00–07:00); start = end is refused (it would be empty or whole).
public struct QuietHours: Sendable, Equatable, SettingValue, CustomStringConvertible {
    /// Minutes after local midnight at which the window opens (0–1439).
    public let start: Int
    /// Minutes after local midnight at which it closes (0–1439), not included.
    public let end: Int
    /// The user's local time minus UTC, in minutes (−840 … 840: UTC−14 … UTC+14).
    public let utcOffsetMinutes: Int

    /// A window from `start` to `end` (minutes after local midnight) at `utcOffsetMinutes`.
    /// - Throws: ``MessagesManagerError/invalidQuietHours(_:)`` when a minute is outside 0–1439,
    ///   start = end, or the offset is outside ±840 minutes.
    public init(start: Int, end: Int, utcOffsetMinutes: Int) throws {
        guard (0..<1440).contains(start), (0..<1440).contains(end) else {
            throw MessagesManagerError.invalidQuietHours("a time of day is 00:00 … 23:59")
        }
        guard start != end else { throw MessagesManagerError.invalidQuietHours("the window starts where it ends") }
        guard (-840...840).contains(utcOffsetMinutes) else {
            throw MessagesManagerError.invalidQuietHours("the offset from UTC is at most 14 hours either way")
        }
        self.start = start
        self.end = end
        self.utcOffsetMinutes = utcOffsetMinutes
    }

    /// Parses `HH:MM-HH:MM` (24-hour clock, as `coords quiet 22:00-07:00` takes it).
    /// - Throws: ``MessagesManagerError/invalidQuietHours(_:)``.
    public init(parsing text: String, utcOffsetMinutes: Int) throws {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]) else {
            throw MessagesManagerError.invalidQuietHours("write the window as HH:MM-HH:MM, e.g. 22:00-07:00")
        }
        try self.init(start: start, end: end, utcOffsetMinutes: utcOffsetMinutes)
    }

    /// Whether the instant `now` (Unix ms) is inside the window.
    public func contains(_ now: UInt64) -> Bool {
        // Minutes since the epoch fit an Int (now / 60,000 < 2⁴⁹); the offset is at most ±840.
        let local = (Int(now / 60_000) + utcOffsetMinutes) % 1440
        let minute = local < 0 ? local + 1440 : local
        return start < end ? (start <= minute && minute < end) : (minute >= start || minute < end)
    }

    /// `HH:MM-HH:MM`.
    public var description: String { "\(Self.clock(start))-\(Self.clock(end))" }

    /// `start,end,offset` in the settings table.
    public var settingText: String { "\(start),\(end),\(utcOffsetMinutes)" }

    /// Reads `start,end,offset`; nil when it is anything else or out of range.
    public init?(settingText: String) {
        let parts = settingText.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3, let start = Int(parts[0]), let end = Int(parts[1]), let offset = Int(parts[2]),
            let hours = try? QuietHours(start: start, end: end, utcOffsetMinutes: offset)  // out of range: not a stored value
        else { return nil }
        self = hours
    }

    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
            let hours = Int(parts[0]), let minutes = Int(parts[1]), hours < 24, minutes < 60
        else { return nil }
        return hours * 60 + minutes
    }

    private static func clock(_ minutes: Int) -> String {
        let (h, m) = (minutes / 60, minutes % 60)
        return (h < 10 ? "0\(h)" : "\(h)") + ":" + (m < 10 ? "0\(m)" : "\(m)")
    }
}

/// What decides whether a received message notifies the user, and whether texts are confirmed
/// with delivery receipts (issue 43). Kept in the store; the core applies it to every message it
/// receives (``MessageRecord/notify``), so no host has to repeat the rules.
///
/// A received message notifies when it is a text or a file, its conversation is not muted at that
/// moment, and the moment is outside the quiet hours. Receipts, rotations, group changes and
/// other control messages never notify.
public struct NotificationPolicy: Sendable, Equatable {
    /// Quiet hours; nil: none (the default).
    public var quietHours: QuietHours?
    /// Whether texts received are confirmed with a delivery receipt (default: yes). A receipt tells
    /// the sender, and the relay, when this app fetched.
    public var deliveryReceipts: Bool

    /// A `mutedUntil` that never passes: muted until unmuted.
    public static let forever = UInt64.max

    /// A policy.
    public init(quietHours: QuietHours? = nil, deliveryReceipts: Bool = true) {
        self.quietHours = quietHours
        self.deliveryReceipts = deliveryReceipts
    }

    /// The message kinds that can notify.
    public static let notifyingKinds: Set<String> = ["text", FileAttachment.kind]

    /// Whether a received message of `kind`, in a conversation muted until `mutedUntil` (nil: not
    /// muted), should notify at `now` (Unix ms).
    public func shouldNotify(kind: String, mutedUntil: UInt64?, at now: UInt64) -> Bool {
        guard Self.notifyingKinds.contains(kind) else { return false }
        if let mutedUntil, now < mutedUntil { return false }
        if let quietHours, quietHours.contains(now) { return false }
        return true
    }

    /// The policy stored in `tx`.
    /// - Throws: store errors (a damaged row is an error, never read as the default).
    static func stored(_ tx: borrowing WriteTransaction) throws -> NotificationPolicy {
        let settings = try tx.open(Tables.settings)
        return NotificationPolicy(
            quietHours: try settings.get(SettingKey.quietHours), deliveryReceipts: try settings.get(SettingKey.deliveryReceipts) ?? true)
    }
}

extension NotificationPolicy {
    /// The policy stored in `tx` (a read transaction).
    /// - Throws: store errors.
    static func stored(reading tx: borrowing ReadTransaction) throws -> NotificationPolicy {
        let settings = try tx.open(Tables.settings)
        return NotificationPolicy(
            quietHours: try settings.get(SettingKey.quietHours), deliveryReceipts: try settings.get(SettingKey.deliveryReceipts) ?? true)
    }
}

extension SettingKey {
    /// Quiet hours (absent: none), ``QuietHours`` as `start,end,offset`.
    public static let quietHours = Setting<QuietHours>("quiet_hours")
}
