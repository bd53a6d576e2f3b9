/// Errors of the wallet (identity and backups). Codes 600–609, stable.
public enum WalletManagerError: CoordsCoreError, Equatable {
    /// No identity yet: create or import one first.
    case noIdentity
    /// An identity already exists; it is never overwritten silently.
    case identityExists(id: String)
    /// The backup is damaged or not a CoordsCore backup.
    case invalidBackup(String)
    /// The passphrase does not open the backup.
    case wrongPassphrase
    /// The backup was written by a newer format version.
    case unsupportedBackupVersion(UInt8)
    /// No relay configured: set a server first.
    case noServer

    public var code: Int32 {
        switch self {
        case .noIdentity: 600
        case .identityExists: 601
        case .invalidBackup: 602
        case .wrongPassphrase: 603
        case .unsupportedBackupVersion: 604
        case .noServer: 605
        }
    }

    public var description: String {
        switch self {
        case .noIdentity: "no identity yet: create one or import a seed or backup first"
        case .identityExists(let id): "an identity (\(id.prefix(8))…) already exists in this data directory; it is never replaced silently"
        case .invalidBackup(let why): "not a valid CoordsCore backup: \(why)"
        case .wrongPassphrase: "the passphrase does not open this backup"
        case .unsupportedBackupVersion(let v): "backup format version \(v) is newer than this build understands; update CoordsCore"
        case .noServer: "no relay server configured: set one (https://…) first"
        }
    }
}

/// Errors of the friends list. Codes 610–619, stable.
public enum FriendsManagerError: CoordsCoreError, Equatable {
    /// No friend with this id.
    case notFound(id: String)
    /// The link or id is your own.
    case cannotAddSelf
    /// ``FriendsManager/resolveConflict(id:keep:)`` for a friend not in conflict, or a key that is
    /// not one of the candidates.
    case notInConflict(id: String)
    /// The friend is in a key conflict: pick a key with ``FriendsManager/resolveConflict(id:keep:)``
    /// (or block or remove them) instead.
    case inConflict(id: String)

    public var code: Int32 {
        switch self {
        case .notFound: 610
        case .cannotAddSelf: 611
        case .notInConflict: 612
        case .inConflict: 613
        }
    }

    public var description: String {
        switch self {
        case .notFound(let id): "no friend with id \(id.prefix(12))…"
        case .cannotAddSelf: "that is your own link; share it with a friend instead"
        case .notInConflict(let id): "\(id.prefix(12))… is not in a key conflict, or that key is not one of its candidates"
        case .inConflict(let id):
            "\(id.prefix(12))… is in a key conflict (two different rotations of their old key): compare safety numbers again and pick a key"
        }
    }
}

/// Errors of location sharing. Codes 620–629, stable.
public enum LocationManagerError: CoordsCoreError, Equatable {
    /// ``LocationManager/markUploadSucceeded(fixTimestamp:)`` for a fix that was never prepared.
    case unknownUpload(fixTimestamp: UInt64)
    /// The fix is dated more than 10 minutes ahead of the clock; uploading it would make every
    /// later fix look stale.
    case fixInFuture(fixTimestamp: UInt64, now: UInt64)

    public var code: Int32 {
        switch self {
        case .unknownUpload: 620
        case .fixInFuture: 621
        }
    }

    public var description: String {
        switch self {
        case .unknownUpload(let fix): "no upload of the fix from \(fix) ms was prepared"
        case .fixInFuture(let fix, let now):
            "the fix is dated \(fix) ms, more than 10 minutes after the current time \(now) ms; check the device clock"
        }
    }
}
