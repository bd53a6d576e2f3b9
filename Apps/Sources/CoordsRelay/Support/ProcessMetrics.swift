#if canImport(Glibc)
import Glibc
#endif

/// The standard Prometheus process metrics (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_start_time_seconds`), read from `/proc/self` at scrape time.
/// A value that cannot be read (no /proc) is left out rather than reported as 0.
enum ProcessMetrics {
    /// The exposition lines (HELP, TYPE, value) of every value that could be read.
    static func exposition() -> String {
        var text = ""
        func add(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value, value.isFinite else { return }
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(format(value))\n"
        }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        let stat = readStat()
        add(
            "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
            stat.flatMap { s in ticks > 0 ? (s.userTicks + s.systemTicks) / ticks : nil })
        add("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", stat.map(\.virtualBytes))
        add(
            "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
            stat.flatMap { s in page > 0 ? s.residentPages * page : nil })
        add(
            "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
            stat.flatMap { s in bootTime().flatMap { boot in ticks > 0 ? boot + s.startTicks / ticks : nil } })
        add("process_open_fds", "gauge", "Number of open file descriptors.", openDescriptors())
        var limit = rlimit()
        add(
            "process_max_fds", "gauge", "Maximum number of open file descriptors.",
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_cur != rlim_t.max ? Double(limit.rlim_cur) : nil)
        return text
    }

    struct Stat {
        var userTicks: Double, systemTicks: Double, startTicks: Double, virtualBytes: Double, residentPages: Double
    }

    /// Fields 14, 15, 22, 23 and 24 of /proc/self/stat (counted after the parenthesised name,
    /// which may itself contain spaces and parentheses).
    static func readStat() -> Stat? {
        guard let text = readSmallFile("/proc/self/stat") else { return nil }
        return parseStat(text)
    }

    static func parseStat(_ text: String) -> Stat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); field n is fields[n - 3].
        func field(_ n: Int) -> Double? { fields.indices.contains(n - 3) ? Double(fields[n - 3]) : nil }
        guard let user = field(14), let system = field(15), let start = field(22), let virtual = field(23), let resident = field(24) else {
            return nil
        }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual, residentPages: resident)
    }

    /// `btime` of /proc/stat: when the machine booted, in Unix seconds.
    static func bootTime() -> Double? {
        guard let text = readSmallFile("/proc/stat") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingPrefix(" "))
        }
        return nil
    }

    /// Entries of /proc/self/fd, minus the one the listing itself opened.
    static func openDescriptors() -> Double? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return Double(max(0, count - 1))
    }

    /// A /proc file's text (at most 64 KiB).
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Integers without a fraction ("12"), other values as Swift prints them ("0.37").
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
