package org.coordscore;

import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * A failed call: {@link #code()} is the stable {@code COORDS_ERR_*} value ({@link ErrorCode}),
 * {@link #getMessage()} the library's text. Unchecked (Kotlin callers see no checked-exception
 * noise); the subclass names the layer the code belongs to, as the Python package's classes do.
 */
public class CoordsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int code;

    /**
     * An exception for {@code code} (prefer {@link #of}, which picks the subclass).
     *
     * @param code a COORDS_ERR_* value
     * @param message the library's text
     */
    public CoordsException(int code, @NotNull String message) {
        super("[" + code + (ErrorCode.name(code) == null ? "" : " " + ErrorCode.name(code)) + "] " + message);
        this.code = code;
    }

    /**
     * The stable error code.
     *
     * @return a COORDS_ERR_* value
     */
    public int code() {
        return code;
    }

    /**
     * The header's name of the code without its prefix, e.g. "NOT_A_RECIPIENT".
     *
     * @return the name, or null for a code this version does not know
     */
    public @Nullable String codeName() {
        return ErrorCode.name(code);
    }

    /**
     * The exception of the right class for {@code code}: 100–199 {@link ArgumentException},
     * 200–299 {@link CryptoException}, 300–399 {@link WireException}, 400–499
     * {@link StoreException}, 500–599 {@link ChannelException}, 600–699 {@link ManagerException},
     * 700–799 {@link GeocodingException}, otherwise this class.
     *
     * @param code a COORDS_ERR_* value
     * @param message the library's text
     * @return the exception (not thrown)
     */
    public static @NotNull CoordsException of(int code, @NotNull String message) {
        switch (code / 100) {
            case 1: return new ArgumentException(code, message);
            case 2: return new CryptoException(code, message);
            case 3: return new WireException(code, message);
            case 4: return new StoreException(code, message);
            case 5: return new ChannelException(code, message);
            case 6: return new ManagerException(code, message);
            case 7: return new GeocodingException(code, message);
            default: return new CoordsException(code, message);
        }
    }

    /** 100–199: an argument the library refused (NULL, wrong length, not UTF-8, bad option, closed handle). */
    public static final class ArgumentException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 1xx code
         * @param message the library's text
         */
        public ArgumentException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 200–299: a cryptographic operation failed (authentication, invalid key, no AES-NI). */
    public static final class CryptoException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 2xx code
         * @param message the library's text
         */
        public CryptoException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 300–399: bytes or text that are not valid Coords wire format (blobs, links, JSON, envelopes). */
    public static final class WireException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 3xx code
         * @param message the library's text
         */
        public WireException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 400–499: the store (already open, full, damaged, sealed with another key). */
    public static final class StoreException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 4xx code
         * @param message the library's text
         */
        public StoreException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 500–599: update channels (closed, timed out). */
    public static final class ChannelException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 5xx code
         * @param message the library's text
         */
        public ChannelException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 600–699: app state (no identity, unknown friend, wrong passphrase, damaged keychain, groups). */
    public static final class ManagerException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 6xx code
         * @param message the library's text
         */
        public ManagerException(int code, @NotNull String message) {
            super(code, message);
        }
    }

    /** 700–799: place lookups (a position not on Earth, damaged place data). */
    public static final class GeocodingException extends CoordsException {
        private static final long serialVersionUID = 1L;

        /**
         * @param code a 7xx code
         * @param message the library's text
         */
        public GeocodingException(int code, @NotNull String message) {
            super(code, message);
        }
    }
}
