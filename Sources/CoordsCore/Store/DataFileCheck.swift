import CPlatform

/// Checks an existing `data.mdb` before LMDB maps it. LMDB trusts its file: a file cut short
/// (a full disk during a copy, a half-restored backup, a damaged disk) makes it read pages past
/// the end of the file, which the kernel answers with SIGBUS — a crash, not an error. Reading the
/// two meta pages first turns that into ``StoreError/corrupted(_:)``.
enum DataFileCheck {
    /// `MDB_MAGIC`.
    static let magic: UInt32 = 0xBEEF_C0DE
    /// Where the meta fields sit in a meta page (LMDB's `MDB_page` header of 16 bytes, then
    /// `MDB_meta` on a 64-bit build): magic, version, then the free table's record, whose first
    /// 4 bytes hold the page size, and after both tables' records the last page number and the
    /// transaction id.
    static let magicOffset = 16
    static let pageSizeOffset = 40
    static let lastPageOffset = 136
    static let transactionOffset = 144
    /// The first bytes of a meta page that hold those fields.
    static let metaBytes = 152

    /// What is wrong with `directory/data.mdb`, or nil when it is absent (a new store) or its
    /// size covers every page its newest meta page says is in use. Anything but a regular file (a
    /// FIFO, a device, a directory, followed through links) is `MDB_INVALID` at once: opening a
    /// FIFO to read it would wait for a writer forever.
    static func problem(directory: String) -> LMDBCode? {
        var kind = stat()
        if stat(directory + "/data.mdb", &kind) == 0, coords_mode_is_regular(kind.st_mode) == 0 { return .invalid }
        let fd = coords_open(directory + "/data.mdb", O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0)
        guard fd >= 0 else { return nil }  // absent (LMDB creates it) or unreadable (LMDB reports it)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .system(coords_errno()) }
        let size = UInt64(clamping: info.st_size)
        if size == 0 { return nil }  // created but never written: LMDB initialises it
        guard let first = meta(fd, at: 0) else { return .invalid }
        guard first.magic == magic, first.pageSize >= 512, first.pageSize <= 65_536, first.pageSize & (first.pageSize - 1) == 0 else {
            return .invalid
        }
        let pageSize = UInt64(first.pageSize)
        guard size >= 2 * pageSize, let second = meta(fd, at: Int64(pageSize)), second.magic == magic else { return .pageNotFound }
        let newest = second.transaction > first.transaction ? second : first
        // The file must hold pages 0 … last: compared on the safe side of overflow.
        let (pages, overflow) = newest.lastPage.addingReportingOverflow(1)
        guard !overflow, pages <= size / pageSize else { return .pageNotFound }
        return nil
    }

    private struct Meta {
        var magic: UInt32
        var pageSize: UInt32
        var lastPage: UInt64
        var transaction: UInt64
    }

    private static func meta(_ fd: Int32, at offset: Int64) -> Meta? {
        var bytes = [UInt8](repeating: 0, count: metaBytes)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, metaBytes, off_t(offset)) }
        guard read == metaBytes else { return nil }
        func integer<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            bytes[at..<at + MemoryLayout<T>.size].reversed().reduce(T(0)) { $0 << 8 | T($1) }
        }
        return Meta(
            magic: integer(magicOffset, UInt32.self), pageSize: integer(pageSizeOffset, UInt32.self),
            lastPage: integer(lastPageOffset, UInt64.self), transaction: integer(transactionOffset, UInt64.self))
    }
}
