/// The nearest named place to a position, as ``PlaceIndex/nearestPlace(latitude:longitude:)``
/// chooses it. Everything here comes from bundled data: no coordinate ever leaves the device.
public struct Place: Sendable, Hashable {
    /// The place's name as GeoNames spells it ("Lisboa", "Austin").
    public var name: String
    /// ISO 3166-1 alpha-2 country code ("PT"), or nil when the data has none.
    public var countryCode: String?
    /// The country's English name ("Portugal"), or nil when unknown.
    public var countryName: String?
    /// The US state's name ("Texas") for places in the United States, nil elsewhere.
    public var stateName: String?
    /// Population (0 when GeoNames does not know it).
    public var population: UInt32
    /// The place's own coordinates (degrees, to the microdegree).
    public var latitude: Double
    /// Degrees east, like ``latitude``.
    public var longitude: Double
    /// Great-circle (haversine, R = 6371 km) distance from the query to the place, in km.
    public var distanceKm: Double

    /// The label a host shows: "Lisboa, Portugal", "Austin, Texas" (US places name their state),
    /// or just the name when no country is known.
    public var displayName: String {
        if let stateName, countryCode == "US" { return "\(name), \(stateName)" }
        if let countryName { return "\(name), \(countryName)" }
        return name
    }

    /// The radius within which a position counts as "in" the place: it grows with the population
    /// (√population / 150 km, so 3 km for a town of 200,000, 10 km for 2.25 million) and stays
    /// between 3 and 15 km.
    public var radiusKm: Double {
        min(15, max(3, Double(population).squareRoot() / 150))
    }

    /// A phrase for hosts that takes the fix's accuracy into account:
    /// - "in Lisboa, Portugal" when the position (with its accuracy) is within ``radiusKm``,
    /// - "near Lisboa, Portugal" within 30 km, or when the fix is too coarse to say more
    ///   (accuracy radius at least the distance),
    /// - "42 km from Lisboa, Portugal" beyond that (whole kilometres).
    /// - Parameter accuracyMetres: the fix's accuracy radius (negative or non-finite counts as 0).
    public func phrase(accuracyMetres: Double = 0) -> String {
        let accuracyKm = accuracyMetres.isFinite ? max(0, accuracyMetres) / 1000 : 0
        let reach = distanceKm + accuracyKm
        if reach <= radiusKm { return "in \(displayName)" }
        if distanceKm <= 30 || accuracyKm >= distanceKm { return "near \(displayName)" }
        return "\(Int(distanceKm.rounded())) km from \(displayName)"
    }
}
