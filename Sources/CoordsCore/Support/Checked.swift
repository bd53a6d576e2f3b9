/// Arithmetic for numbers that come from outside: the network, files, the C ABI, the clock.
///
/// The rule (docs/ARCHITECTURE.md, "Untrusted numbers"): a value an attacker or a damaged file
/// can choose never meets a trapping `+`, `-`, `*`, a trapping integer conversion or an unchecked
/// index. Compare on the side that cannot overflow (`now - skew <= t` becomes
/// `t.isWithin(skew, of: now)`), saturate where a bound is enough (expiry times, deadlines), and
/// report overflow where the exact value matters (lengths and offsets). These helpers are the
/// whole toolbox; they never trap, whatever their arguments.
extension FixedWidthInteger {
    /// `self + other`, clamped to the type's range instead of trapping.
    @inlinable
    public func addingSaturating(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }

    /// `self - other`, clamped to the type's range (0 for unsigned types) instead of trapping.
    @inlinable
    public func subtractingSaturating(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }

    /// `self * other`, clamped to the type's range instead of trapping.
    @inlinable
    public func multipliedSaturating(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) != (other < 0) ? .min : .max
    }

    /// `self + other`, or nil when it does not fit (for lengths and offsets, where a clamped
    /// value would be wrong).
    @inlinable
    public func addingChecked(_ other: Self) -> Self? {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? nil : sum
    }

    /// `self * other`, or nil when it does not fit.
    @inlinable
    public func multipliedChecked(by other: Self) -> Self? {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? nil : product
    }
}

extension UnsignedInteger where Self: FixedWidthInteger {
    /// Whether `self` lies within `window` of `reference` in either direction
    /// (`|self − reference| ≤ window`), computed without any overflow: the subtraction is always
    /// the larger minus the smaller.
    @inlinable
    public func isWithin(_ window: Self, of reference: Self) -> Bool {
        self >= reference ? self - reference <= window : reference - self <= window
    }

    /// The distance `|self − other|`, which always fits.
    @inlinable
    public func distance(to other: Self) -> Self {
        self >= other ? self - other : other - self
    }
}
