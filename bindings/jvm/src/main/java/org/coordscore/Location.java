package org.coordscore;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * A position fix: degrees, metres, and the fix time in milliseconds since the epoch. Written by
 * hand (it is the C struct {@code CoordsLocation} as well as a JSON record); its fields are
 * described in bindings/records.json like every record's. Range checks are the library's
 * ({@link ErrorCode#INVALID_LOCATION}).
 */
public final class Location {
    private final double latitude;
    private final double longitude;
    private final double altitude;
    private final double accuracy;
    private final long timestampMs;

    /**
     * A fix.
     *
     * @param latitude degrees, -90…90
     * @param longitude degrees, -180…180
     * @param altitude metres above sea level (0 when unknown)
     * @param accuracy metres (0 when unknown)
     * @param timestampMs when the fix was taken, ms since the epoch (a fix dated 1970 is refused as stale)
     */
    public Location(double latitude, double longitude, double altitude, double accuracy, long timestampMs) {
        this.latitude = latitude;
        this.longitude = longitude;
        this.altitude = altitude;
        this.accuracy = accuracy;
        this.timestampMs = timestampMs;
    }

    /**
     * A fix without altitude or accuracy.
     *
     * @param latitude degrees
     * @param longitude degrees
     * @param timestampMs when the fix was taken, ms since the epoch
     */
    public Location(double latitude, double longitude, long timestampMs) {
        this(latitude, longitude, 0, 0, timestampMs);
    }

    /** @return degrees north */
    public double getLatitude() {
        return latitude;
    }

    /** @return degrees east */
    public double getLongitude() {
        return longitude;
    }

    /** @return metres above sea level (0 when unknown) */
    public double getAltitude() {
        return altitude;
    }

    /** @return metres of uncertainty (0 when unknown) */
    public double getAccuracy() {
        return accuracy;
    }

    /** @return the fix time, ms since the epoch */
    public long getTimestampMs() {
        return timestampMs;
    }

    /**
     * The library's JSON shape: latitude, longitude, altitude_m, accuracy_m, timestamp_ms.
     *
     * @return a new map
     */
    public @NotNull Map<String, Object> toJson() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("latitude", latitude);
        out.put("longitude", longitude);
        out.put("altitude_m", altitude);
        out.put("accuracy_m", accuracy);
        out.put("timestamp_ms", timestampMs);
        return out;
    }

    /**
     * A Location from the library's JSON.
     *
     * @param value a parsed JSON object
     * @return the fix
     * @throws CoordsException.WireException UNEXPECTED_JSON when a field is missing or of another type
     */
    public static @NotNull Location fromJson(@Nullable Object value) {
        Map<String, Object> o = Json.asObject(value, "Location");
        return new Location(Json.doubleValue(o, "latitude"), Json.doubleValue(o, "longitude"), Json.doubleValue(o, "altitude_m", 0),
            Json.doubleValue(o, "accuracy_m", 0), Json.longValue(o, "timestamp_ms"));
    }

    Structs.Location toC() {
        Structs.Location c = new Structs.Location();
        c.latitude = latitude;
        c.longitude = longitude;
        c.altitude = altitude;
        c.accuracy = (float) accuracy;
        c.timestamp_ms = timestampMs;
        return c;
    }

    static Location fromC(Structs.Location c) {
        return new Location(c.latitude, c.longitude, c.altitude, c.accuracy, c.timestamp_ms);
    }

    @Override
    public boolean equals(Object other) {
        if (this == other) return true;
        if (!(other instanceof Location)) return false;
        Location that = (Location) other;
        return Double.compare(latitude, that.latitude) == 0 && Double.compare(longitude, that.longitude) == 0
            && Double.compare(altitude, that.altitude) == 0 && Double.compare(accuracy, that.accuracy) == 0
            && timestampMs == that.timestampMs;
    }

    @Override
    public int hashCode() {
        return Objects.hash(latitude, longitude, altitude, accuracy, timestampMs);
    }

    @Override
    public String toString() {
        return "Location[latitude=" + latitude + ", longitude=" + longitude + ", altitude=" + altitude + ", accuracy=" + accuracy
            + ", timestampMs=" + timestampMs + "]";
    }
}
