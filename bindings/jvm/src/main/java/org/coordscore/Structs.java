package org.coordscore;

import com.sun.jna.Callback;
import com.sun.jna.IntegerType;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.nio.charset.StandardCharsets;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * The C structures, callback types and {@code size_t} of include/coordscore.h as JNA maps them,
 * for {@link Native}. Their layouts are the header's (checked there by static asserts).
 */
public final class Structs {
    private Structs() {}

    /** {@code size_t}: as wide as the platform's pointers. */
    public static final class SizeT extends IntegerType {
        private static final long serialVersionUID = 1L;

        /** Zero. */
        public SizeT() {
            this(0);
        }

        /**
         * A size.
         *
         * @param value a non-negative count
         */
        public SizeT(long value) {
            super(com.sun.jna.Native.SIZE_T_SIZE, value, true);
        }
    }

    /** {@code CoordsError}: a code and a message the library owns (coords_error_free). */
    @Structure.FieldOrder({"code", "message"})
    public static final class Error extends Structure {
        /** A COORDS_ERR_* value, 0 when none. */
        public int code;
        /** UTF-8, NUL-terminated, owned by the library; null when none. */
        public Pointer message;
    }

    /** {@code CoordsBuffer}: bytes the library owns until coords_buffer_free. */
    @Structure.FieldOrder({"data", "len"})
    public static class Buffer extends Structure {
        /** The bytes, or null. */
        public Pointer data;
        /** How many. */
        public SizeT len = new SizeT();
    }

    /** {@code CoordsLocation}: degrees, metres, the fix time in ms since the epoch. */
    @Structure.FieldOrder({"latitude", "longitude", "altitude", "accuracy", "timestamp_ms"})
    public static final class Location extends Structure {
        /** Degrees north. */
        public double latitude;
        /** Degrees east. */
        public double longitude;
        /** Metres above sea level. */
        public double altitude;
        /** Metres. */
        public float accuracy;
        /** Milliseconds since the epoch. */
        public long timestamp_ms;
    }

    /** {@code CoordsHostRequest} of coords_app_due_next (the JSON path, CoordsApp.due, is what this binding uses). */
    @Structure.FieldOrder({"id", "purpose", "method", "url", "headers", "body", "max_response_bytes"})
    public static final class HostRequest extends Structure {
        /** The ticket to report the answer under. */
        public long id;
        /** Why it is sent. */
        public Buffer purpose;
        /** The HTTP method. */
        public Buffer method;
        /** The URL. */
        public Buffer url;
        /** The headers, one "Name: value" per line. */
        public Buffer headers;
        /** The body. */
        public Buffer body;
        /** The most bytes of the answer to read. */
        public long max_response_bytes;
    }

    /** The keychain's save callback: store {@code secret} under {@code name}; 0 on success. */
    public interface SaveCallback extends Callback {
        /**
         * @param context the table's context
         * @param name UTF-8, NUL-terminated
         * @param secret the bytes
         * @param len how many
         * @return 0 on success
         */
        int invoke(Pointer context, Pointer name, Pointer secret, SizeT len);
    }

    /** The keychain's load callback: 0 found, 1 absent, 2 capacity too small, other failure. */
    public interface LoadCallback extends Callback {
        /**
         * @param context the table's context
         * @param name UTF-8, NUL-terminated
         * @param out where to copy the secret
         * @param capacity how many bytes {@code out} holds
         * @param outLen receives the secret's length
         * @return 0, 1, 2 or another failure
         */
        int invoke(Pointer context, Pointer name, Pointer out, SizeT capacity, Pointer outLen);
    }

    /** The keychain's remove callback: 0 also when there was nothing to remove. */
    public interface RemoveCallback extends Callback {
        /**
         * @param context the table's context
         * @param name UTF-8, NUL-terminated
         * @return 0 on success
         */
        int invoke(Pointer context, Pointer name);
    }

    /** {@code CoordsKeychainCallbacks}: the host keychain's three functions. */
    @Structure.FieldOrder({"context", "save", "load", "remove"})
    public static final class KeychainCallbacks extends Structure {
        /** Passed back unchanged. */
        public Pointer context;
        /** Stores a secret. */
        public SaveCallback save;
        /** Loads a secret. */
        public LoadCallback load;
        /** Removes a secret. */
        public RemoveCallback remove;
    }

    /** {@code CoordsUpdateCallback}: one update as UTF-8 JSON, valid during the call only. */
    public interface UpdateCallback extends Callback {
        /**
         * @param context the registration's context
         * @param json the update's bytes
         * @param len how many
         */
        void invoke(Pointer context, Pointer json, SizeT len);
    }

    /**
     * {@code text} as a NUL-terminated UTF-8 C string.
     *
     * @param text a string, or null for a NULL pointer
     * @param name the parameter, for the error
     * @return the bytes, or null
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT when {@code text} contains a NUL
     *     character (C would read only the part before it)
     */
    public static byte @Nullable [] cstr(@Nullable String text, @NotNull String name) {
        if (text == null) return null;
        if (text.indexOf('\0') >= 0) throw CoordsException.of(ErrorCode.INVALID_ARGUMENT, name + " contains a NUL character");
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[utf8.length + 1];
        System.arraycopy(utf8, 0, out, 0, utf8.length);
        return out;
    }
}
