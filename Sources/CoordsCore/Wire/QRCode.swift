/// A QR code (ISO/IEC 18004) for text: what every shell shows a friend link with (`coords
/// whoami` and `coords add` draw it in the terminal; the C ABI hands out its modules or an SVG).
///
/// Byte mode, error-correction level M (15 % of the symbol can be damaged), versions 1–10
/// (up to 213 bytes — a friend link is about 90). The mask is chosen with the standard penalty
/// rules unless one is forced (tests compare every mask with an independent encoder).
public struct QRCode: Sendable, Equatable {
    /// Errors of the encoder.
    public enum Failure: CoordsCoreError, Equatable {
        /// The text does not fit in a version-10 symbol (or the version asked for).
        case tooLong(bytes: Int, maximum: Int)
        /// A version outside 1…10 was asked for.
        case invalidVersion(Int)
        /// A mask outside 0…7 was asked for.
        case invalidMask(Int)

        /// 399 for every case (`COORDS_ERR_QR_UNENCODABLE`).
        public var code: Int32 { 399 }

        public var description: String {
            switch self {
            case .tooLong(let bytes, let maximum): "text of \(bytes) bytes is too long for a terminal QR code (at most \(maximum))"
            case .invalidVersion(let v): "QR version \(v) is not supported (1…10)"
            case .invalidMask(let m): "QR mask \(m) does not exist (0…7)"
            }
        }
    }

    /// Symbol version (1…10); the side is 17 + 4·version modules.
    public let version: Int
    /// The mask pattern used (0…7).
    public let mask: Int
    /// Modules per side.
    public let size: Int
    /// Row-major: true is a dark module.
    public let modules: [Bool]

    /// Whether the module at column `x`, row `y` is dark (false outside the symbol).
    /// - Parameters:
    ///   - x: the column, 0 at the left.
    ///   - y: the row, 0 at the top.
    public func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < size && y < size && modules[y * size + x]
    }

    // Level M block structure per version: (ECC codewords per block, [data codewords per block]).
    static let blocks: [(ecc: Int, data: [Int])] = [
        (10, [16]), (16, [28]), (26, [44]), (18, [32, 32]), (24, [43, 43]),
        (16, [27, 27, 27, 27]), (18, [31, 31, 31, 31]), (22, [38, 38, 39, 39]),
        (22, [36, 36, 36, 37, 37]), (26, [43, 43, 43, 43, 44])
    ]
    static let alignment: [[Int]] = [[], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34], [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50]]

    static func dataCodewords(_ version: Int) -> Int { blocks[version - 1].data.reduce(0, +) }
    static func countBits(_ version: Int) -> Int { version <= 9 ? 8 : 16 }
    static func capacity(_ version: Int) -> Int { (dataCodewords(version) * 8 - 4 - countBits(version)) / 8 }

    /// The largest text supported.
    public static var maximumBytes: Int { capacity(10) }

    /// Encodes `text` (UTF-8) in the smallest version that fits.
    /// - Parameters:
    ///   - text: what the code says (at most ``maximumBytes`` UTF-8 bytes).
    ///   - forcedVersion: a version (1…10) to use instead of the smallest that fits (tests).
    ///   - forcedMask: a mask (0…7) to use instead of the one the penalty rules choose (tests).
    /// - Throws: ``Failure``.
    public init(text: String, version forcedVersion: Int? = nil, mask forcedMask: Int? = nil) throws {
        try self.init(bytes: Array(text.utf8), version: forcedVersion, mask: forcedMask)
    }

    /// Encodes raw bytes.
    /// - Parameters:
    ///   - bytes: what the code says (at most ``maximumBytes``).
    ///   - forcedVersion: a version (1…10) to use instead of the smallest that fits (tests).
    ///   - forcedMask: a mask (0…7) to use instead of the one the penalty rules choose (tests).
    /// - Throws: ``Failure``.
    public init(bytes: [UInt8], version forcedVersion: Int? = nil, mask forcedMask: Int? = nil) throws {
        if let forcedMask, !(0...7).contains(forcedMask) { throw Failure.invalidMask(forcedMask) }
        let version: Int
        if let forcedVersion {
            guard (1...10).contains(forcedVersion) else { throw Failure.invalidVersion(forcedVersion) }
            guard bytes.count <= Self.capacity(forcedVersion) else { throw Failure.tooLong(bytes: bytes.count, maximum: Self.capacity(forcedVersion)) }
            version = forcedVersion
        } else {
            guard let smallest = (1...10).first(where: { bytes.count <= Self.capacity($0) }) else {
                throw Failure.tooLong(bytes: bytes.count, maximum: Self.maximumBytes)
            }
            version = smallest
        }
        let codewords = Self.codewords(bytes, version: version)
        var matrix = Matrix(version: version)
        matrix.drawFunctionPatterns()
        matrix.placeData(codewords)
        var best: (mask: Int, penalty: Int, modules: [Bool])?
        for mask in forcedMask.map({ [$0] }) ?? Array(0...7) {
            var candidate = matrix
            candidate.apply(mask: mask)
            candidate.drawFormat(mask: mask)
            let penalty = candidate.penalty()
            if let current = best, penalty >= current.penalty { continue }
            best = (mask, penalty, candidate.modules)
        }
        self.version = version
        size = matrix.size
        mask = best?.mask ?? 0
        modules = best?.modules ?? matrix.modules
    }

    /// Data bits, padding, Reed–Solomon error correction and interleaving.
    static func codewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) { for i in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> i) & 1 == 1) } }
        append(0b0100, 4)
        append(bytes.count, countBits(version))
        for byte in bytes { append(Int(byte), 8) }
        let capacityBits = dataCodewords(version) * 8
        append(0, min(4, capacityBits - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var data: [UInt8] = stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { $0 << 1 | (bits[start + $1] ? 1 : 0) }
        }
        var pad: UInt8 = 0xEC
        while data.count < dataCodewords(version) {
            data.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        let structure = blocks[version - 1]
        var dataBlocks: [[UInt8]] = []
        var offset = 0
        for count in structure.data {
            dataBlocks.append(Array(data[offset..<offset + count]))
            offset += count
        }
        let generator = ReedSolomon.generator(degree: structure.ecc)
        let eccBlocks = dataBlocks.map { ReedSolomon.remainder($0, generator: generator) }
        var result: [UInt8] = []
        for i in 0..<(structure.data.max() ?? 0) {
            for block in dataBlocks where i < block.count { result.append(block[i]) }
        }
        for i in 0..<structure.ecc {
            for block in eccBlocks { result.append(block[i]) }
        }
        return result
    }

    /// The code drawn with ANSI colours (two module rows per text line) or, without colours,
    /// with `##` for dark modules (for files and light terminals), inside a `quietZone` border.
    /// - Parameters:
    ///   - ansi: draw with ANSI colours (a terminal) rather than `##`.
    ///   - quietZone: light modules around the code (0…16).
    public func render(ansi: Bool, quietZone: Int = 2) -> String {
        let quietZone = min(max(quietZone, 0), 16)
        let range = -quietZone..<(size + quietZone)
        var out = ""
        if ansi {
            // Upper half block: foreground = upper module, background = lower module.
            for y in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
                for x in range {
                    let top = isDark(x: x, y: y)
                    let bottom = y + 1 < range.upperBound && isDark(x: x, y: y + 1)
                    out += "\u{1b}[\(top ? 30 : 97);\(bottom || y + 1 >= range.upperBound ? (bottom ? 40 : 107) : 107)m▀"
                }
                out += "\u{1b}[0m\n"
            }
        } else {
            for y in range {
                for x in range { out += isDark(x: x, y: y) ? "##" : "  " }
                out += "\n"
            }
        }
        return out
    }
}

/// The symbol under construction: modules plus which of them are function patterns.
struct Matrix {
    let version: Int
    let size: Int
    var modules: [Bool]
    var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        size = 17 + 4 * version
        modules = [Bool](repeating: false, count: size * size)
        isFunction = modules
    }

    mutating func set(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    mutating func drawFunctionPatterns() {
        for i in 0..<size {
            set(6, i, i % 2 == 0)
            set(i, 6, i % 2 == 0)
        }
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 {
                    let x = cx + dx
                    let y = cy + dy
                    guard x >= 0, y >= 0, x < size, y < size else { continue }
                    let distance = max(abs(dx), abs(dy))
                    set(x, y, distance != 2 && distance != 4)
                }
            }
        }
        let positions = QRCode.alignment[version - 1]
        for (i, cy) in positions.enumerated() {
            for (j, cx) in positions.enumerated() {
                let last = positions.count - 1
                if (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0) { continue }
                for dy in -2...2 { for dx in -2...2 { set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) } }
            }
        }
        drawFormat(mask: 0)  // reserves the format areas; redrawn for the chosen mask
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for i in 0..<18 {
                let dark = (bits >> i) & 1 == 1
                let a = size - 11 + i % 3
                let b = i / 3
                set(a, b, dark)
                set(b, a, dark)
            }
        }
    }

    /// Level M (format bits 00) with `mask`, BCH-protected and XOR-ed with 0x5412.
    mutating func drawFormat(mask: Int) {
        let data = 0 << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        for i in 0...5 { set(8, i, bit(i)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for i in 9..<15 { set(14 - i, 8, bit(i)) }
        for i in 0..<8 { set(size - 1 - i, 8, bit(i)) }
        for i in 8..<15 { set(8, size - 15 + i, bit(i)) }
        set(8, size - 8, true)  // the dark module
    }

    /// Places the codewords in the two-column zigzag, skipping function modules.
    mutating func placeData(_ data: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for j in 0..<2 {
                    let x = right - j
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    if !isFunction[y * size + x] && index < data.count * 8 {
                        modules[y * size + x] = (data[index >> 3] >> (7 - (index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    mutating func apply(mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (x / 3 + y / 2) % 2 == 0
                case 5: invert = x * y % 2 + x * y % 3 == 0
                case 6: invert = (x * y % 2 + x * y % 3) % 2 == 0
                default: invert = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if invert { modules[y * size + x].toggle() }
            }
        }
    }

    /// The standard penalty score: runs of five or more, 2×2 blocks, finder-like patterns, balance.
    func penalty() -> Int {
        var score = 0
        func module(_ x: Int, _ y: Int) -> Bool { modules[y * size + x] }
        for horizontal in [true, false] {
            for a in 0..<size {
                var line: [Bool] = []
                for b in 0..<size { line.append(horizontal ? module(b, a) : module(a, b)) }
                var run = 1
                for i in 1...size {
                    if i < size && line[i] == line[i - 1] {
                        run += 1
                    } else {
                        if run >= 5 { score += 3 + (run - 5) }
                        run = 1
                    }
                }
                // 1:1:3:1:1 finder-like pattern with four light modules on one side.
                let pattern: [Bool] = [true, false, true, true, true, false, true]
                for i in 0...(size - 7) where Array(line[i..<i + 7]) == pattern {
                    let before = i >= 4 && !line[(i - 4)..<i].contains(true)
                    let after = i + 11 <= size && !line[(i + 7)..<(i + 11)].contains(true)
                    if before || after { score += 40 }
                }
            }
        }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let c = module(x, y)
                if c == module(x + 1, y) && c == module(x, y + 1) && c == module(x + 1, y + 1) { score += 3 }
            }
        }
        let dark = modules.filter { $0 }.count
        let total = size * size
        let k = (abs(dark * 20 - total * 10) + total - 1) / total - 1
        score += max(k, 0) * 10
        return score
    }
}

/// Reed–Solomon over GF(256) with the QR polynomial x⁸ + x⁴ + x³ + x² + 1.
enum ReedSolomon {
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var result: UInt16 = 0
        for i in stride(from: 7, through: 0, by: -1) {
            result = (result << 1) ^ ((result >> 7) * 0x11D)
            result ^= UInt16((b >> UInt8(i)) & 1) * UInt16(a)
        }
        return UInt8(truncatingIfNeeded: result)
    }

    /// Coefficients of ∏ (x − αⁱ), i < degree, highest first without the leading 1.
    static func generator(degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = multiply(result[j], root)
                if j + 1 < degree { result[j] ^= result[j + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    static func remainder(_ data: [UInt8], generator: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ result[0]
            result.removeFirst()
            result.append(0)
            for i in 0..<result.count { result[i] ^= multiply(generator[i], factor) }
        }
        return result
    }
}

extension QRCode {
    /// The code as an SVG document (UTF-8 text): a white square with a black `modulePixels`-sized
    /// square per dark module, inside a `quietZone` border (4 modules, as ISO/IEC 18004 asks).
    /// - Parameters:
    ///   - modulePixels: the side of a module in pixels (1…64).
    ///   - quietZone: light modules around the code (0…16).
    public func svg(modulePixels: Int = 8, quietZone: Int = 4) -> String {
        let scale = min(max(modulePixels, 1), 64)
        let border = min(max(quietZone, 0), 16)
        let side = (size + 2 * border) * scale
        var path = ""
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                path += "M\((x + border) * scale) \((y + border) * scale)h\(scale)v\(scale)h-\(scale)z"
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(side)" height="\(side)" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">\
            <rect width="\(side)" height="\(side)" fill="#fff"/><path fill="#000" d="\(path)"/></svg>

            """
    }
}
