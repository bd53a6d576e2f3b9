import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Plain-text tables with aligned columns.
struct TextTable {
    let headers: [String]
    var rows: [[String]] = []

    init(_ headers: String...) { self.headers = headers }

    mutating func add(_ cells: String...) { rows.append(cells) }

    func render() -> String {
        let all = [headers] + rows
        let widths = headers.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                let cell = row[column]
                return column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// "12 s", "5 min", "3 h", "2 d" since `then` (ms), or "in the future".
func age(since then: UInt64, now: UInt64) -> String {
    guard now >= then else { return "in the future" }
    let seconds = (now - then) / 1000
    switch seconds {
    case ..<60: return "\(seconds) s"
    case ..<3600: return "\(seconds / 60) min"
    case ..<86_400: return "\(seconds / 3600) h"
    default: return "\(seconds / 86_400) d"
    }
}

/// How long until `end` (ms), rounded up to the minute from a minute on: a share made "--for 2h"
/// says "2 h left", not "1 h" (as a rounded-down age would, a few milliseconds later);
/// "1 h 30 min", "45 min", "30 s", "2 d 3 h".
func timeLeft(until end: UInt64, now: UInt64) -> String {
    guard end > now else { return "0 s" }
    let seconds = (end - now).quotientRoundingUp(1000)
    if seconds < 60 { return "\(seconds) s" }
    let minutes = seconds.quotientRoundingUp(60)
    if minutes < 60 { return "\(minutes) min" }
    let (hours, restMinutes) = minutes.quotientAndRemainder(dividingBy: 60)
    if hours < 48 { return restMinutes == 0 ? "\(hours) h" : "\(hours) h \(restMinutes) min" }
    let (days, restHours) = hours.quotientAndRemainder(dividingBy: 24)
    return restHours == 0 ? "\(days) d" : "\(days) d \(restHours) h"
}

extension UInt64 {
    /// `self / divisor`, rounded up (no overflow: the remainder decides).
    fileprivate func quotientRoundingUp(_ divisor: UInt64) -> UInt64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder == 0 ? quotient : quotient + 1
    }
}

/// "47.37690, 8.54170 ±12 m".
func describe(_ location: Location) -> String {
    func f(_ value: Double) -> String {
        let scaled = (value * 100_000).rounded() / 100_000
        var text = String(scaled)
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if decimals < 5 { text += String(repeating: "0", count: 5 - decimals) }
        }
        return text
    }
    return "\(f(location.latitude)), \(f(location.longitude))" + (location.accuracy > 0 ? " ±\(Int(location.accuracy)) m" : "")
}

/// Prints a line on standard output, with every control character in it made visible
/// (``Terminal/safe(_:keepingNewlines:)``; the CLI's own line breaks stay).
func printLine(_ text: String) { printRaw(Terminal.safe(text, keepingNewlines: true)) }

/// Prints a line exactly as given: only for text the CLI made itself with escape sequences
/// (the QR code's colours).
func printRaw(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

/// Prints a JSON document on one line; characters that could drive a terminal are JSON escapes.
func printJSON(_ value: JSONValue) { printRaw(Terminal.safeJSON(value.serializedString)) }

/// Whether standard output is a terminal (colours, QR code in blocks).
var isTerminal: Bool { isatty(1) != 0 }

/// The current wall-clock time in ms.
func nowMilliseconds() -> UInt64 { TimeSource.system.now() }
