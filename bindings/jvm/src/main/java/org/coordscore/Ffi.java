package org.coordscore;

import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;

/**
 * The loaded library and the helpers every call goes through: a failed status becomes a
 * {@link CoordsException} (the error's message freed), a returned buffer is copied and freed,
 * whatever happens.
 */
final class Ffi {
    private Ffi() {}

    /** The library: {@code -Dcoordscore.library=PATH}, then {@code $COORDSCORE_LIB}, then "coordscore" on JNA's path. */
    static final Native LIB = load();

    /** The header version this binding was generated against. */
    static final int ABI_VERSION = 1;

    private static Native load() {
        String path = System.getProperty("coordscore.library");
        if (path == null) path = System.getenv("COORDSCORE_LIB");
        Native lib = com.sun.jna.Native.load(path != null ? path : "coordscore", Native.class);
        int loaded = lib.coords_abi_version();
        if (loaded != ABI_VERSION) {
            throw CoordsException.of(ErrorCode.ABI_MISMATCH, "libcoordscore ABI " + loaded + " does not match this binding's " + ABI_VERSION);
        }
        return lib;
    }

    /** A C call that takes the trailing {@code CoordsError *}. */
    interface Call {
        int run(Structs.Error error);
    }

    /** A C call that takes a {@code CoordsBuffer *} and the trailing {@code CoordsError *}. */
    interface BufferCall {
        int run(Structs.Buffer buffer, Structs.Error error);
    }

    static void check(int status, Structs.Error error) {
        if (status == ErrorCode.OK) return;
        String message = "";
        if (error.message != null) message = error.message.getString(0, StandardCharsets.UTF_8.name());
        LIB.coords_error_free(error);
        throw CoordsException.of(status, message);
    }

    static void call(Call call) {
        Structs.Error error = new Structs.Error();
        check(call.run(error), error);
    }

    static byte[] take(Structs.Buffer buffer) {
        try {
            long length = buffer.len.longValue();
            if (buffer.data == null || length == 0) return new byte[0];
            if (length > Integer.MAX_VALUE - 8) throw CoordsException.of(ErrorCode.TOO_LARGE, "a buffer of " + length + " bytes");
            return buffer.data.getByteArray(0, (int) length);
        } finally {
            LIB.coords_buffer_free(buffer);
        }
    }

    static byte[] buffer(BufferCall call) {
        Structs.Buffer buffer = new Structs.Buffer();
        Structs.Error error = new Structs.Error();
        int status = call.run(buffer, error);
        if (status != ErrorCode.OK) {
            LIB.coords_buffer_free(buffer);
            check(status, error);
        }
        return take(buffer);
    }

    static String text(BufferCall call) {
        return new String(buffer(call), StandardCharsets.UTF_8);
    }

    static Object json(BufferCall call) {
        return Json.parse(buffer(call));
    }

    static byte[] bytes(byte[] data, String name, int size) {
        if (data == null) throw CoordsException.of(ErrorCode.NULL_ARGUMENT, name + " is null");
        if (size >= 0 && data.length != size) {
            throw CoordsException.of(ErrorCode.INVALID_LENGTH, name + " must be " + size + " bytes, got " + data.length);
        }
        return data;
    }

    static byte[] cstr(String text, String name) {
        if (text == null) throw CoordsException.of(ErrorCode.NULL_ARGUMENT, name + " is null");
        return Structs.cstr(text, name);
    }

    static Structs.SizeT size(long n) {
        return new Structs.SizeT(n);
    }

    static String utf8(Pointer pointer) {
        return pointer == null ? "" : pointer.getString(0, StandardCharsets.UTF_8.name());
    }
}
