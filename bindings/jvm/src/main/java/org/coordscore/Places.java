package org.coordscore;

import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.Closeable;
import org.jetbrains.annotations.NotNull;

/**
 * A loaded CGEO place file (e.g. the cities1000 set of {@code scripts/build-geodata.py --large})
 * for offline place names. Close it when done (a collected one is closed by a cleaner). Safe to
 * share across threads.
 */
public final class Places implements Closeable {
    private final Handle handle;

    /**
     * Loads a place file.
     *
     * @param path the CGEO file
     * @throws CoordsException.GeocodingException DAMAGED_PLACE_DATA, UNSUPPORTED_PLACE_DATA, UNREADABLE_PLACE_FILE
     */
    public Places(@NotNull String path) {
        PointerByReference out = new PointerByReference();
        byte[] file = Ffi.cstr(path, "path");
        Ffi.call(e -> Ffi.LIB.coords_places_open(file, out, e));
        handle = new Handle("place file", out.getValue(), p -> Ffi.call(e -> Ffi.LIB.coords_places_close(p, e)));
        Handle.CLEANER.register(this, handle);
    }

    /**
     * The nearest place in this file (see {@link Coords#nearestPlace}).
     *
     * @param latitude degrees
     * @param longitude degrees
     * @param accuracyMeters metres (0 when unknown)
     * @return the place
     * @throws CoordsException.GeocodingException INVALID_COORDINATE
     */
    public @NotNull Place nearest(double latitude, double longitude, double accuracyMeters) {
        return Place.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_places_nearest(handle.get(), latitude, longitude, accuracyMeters, b, e)));
    }

    /**
     * How many places the file holds.
     *
     * @return the count
     */
    public long count() {
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_places_count(handle.get(), out, e));
        return out.getValue();
    }

    /** Releases the file (idempotent). */
    @Override
    public void close() {
        handle.run();
    }
}
