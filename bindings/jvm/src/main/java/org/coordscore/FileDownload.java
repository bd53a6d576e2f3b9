package org.coordscore;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import java.io.Closeable;
import java.nio.charset.StandardCharsets;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * A file being received ({@link CoordsApp#beginDownload}): the plaintext is written to the
 * descriptor as chunks open. Write to a temporary file; make it final only when
 * {@link #finish()} returns true, and remove it on any error. Close it when done.
 */
public final class FileDownload implements Closeable {
    private final Handle handle;

    FileDownload(Pointer pointer) {
        handle = new Handle("download", pointer, Ffi.LIB::coords_download_free);
        Handle.CLEANER.register(this, handle);
    }

    /**
     * The GET to send (with Range after a break) and the most body bytes to read.
     *
     * @return the request and its cap
     */
    public @NotNull Transfer.Ranged request() {
        LongByReference maximum = new LongByReference();
        byte[] body = Ffi.buffer((b, e) -> Ffi.LIB.coords_download_request(handle.get(), b, maximum, e));
        return new Transfer.Ranged(Request.fromJson(Json.parse(body)), maximum.getValue());
    }

    /**
     * Checks the answer's status (and Retry-After) before its body, and for a 200 or 206 its
     * Content-Length: it must be exactly what {@link #request()} asked for.
     *
     * @param status the HTTP status
     * @param retryAfter the Retry-After header, or null
     * @param contentLength the Content-Length header, or null when it has none
     * @return 0 when the body is to be read next through {@link #take}; else the seconds (1..60) to wait before sending the request again
     * @throws CoordsException.WireException OBJECT_MISMATCH (404 gone, a 200 to a range, another status or length)
     */
    public long check(int status, @Nullable String retryAfter, @Nullable String contentLength) {
        LongByReference wait = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_download_check(handle.get(), status, Structs.cstr(retryAfter, "retryAfter"), wait, e));
        if (wait.getValue() == 0 && contentLength != null) {
            Ffi.call(e -> Ffi.LIB.coords_download_check_length(handle.get(), Ffi.cstr(contentLength, "contentLength"), e));
        }
        return wait.getValue();
    }

    /**
     * {@code arrived} more bytes of the body came (call it per read, before {@link #take}).
     *
     * @param arrived bytes read
     * @return false when the answer is too slow (under 16 KiB in 30 s) or past the deadline: cut it off and call {@link #failed}
     */
    public boolean pace(long arrived) {
        if (arrived < 0) throw CoordsException.of(ErrorCode.INVALID_ARGUMENT, "arrived must not be negative");
        IntByReference keep = new IntByReference();
        Ffi.call(e -> Ffi.LIB.coords_download_pace(handle.get(), arrived, keep, e));
        return keep.getValue() == 1;
    }

    /**
     * A try failed: lost, cut off or too slow (0), or busy (what {@link #check} returned).
     *
     * @param retryAfterSeconds what check returned, or 0
     * @return wait and try again, or give up
     */
    public @NotNull Transfer.Retry failed(long retryAfterSeconds) {
        LongByReference wait = new LongByReference();
        byte[] reason = Ffi.buffer((b, e) -> Ffi.LIB.coords_download_failed(handle.get(), retryAfterSeconds, wait, b, e));
        return new Transfer.Retry(wait.getValue(), new String(reason, StandardCharsets.UTF_8));
    }

    /**
     * Seconds until the download's deadline (at least 1): the timeout for the next request.
     *
     * @return seconds
     */
    public long secondsLeft() {
        LongByReference seconds = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_transfer_seconds_left(null, handle.get(), seconds, e));
        return seconds.getValue();
    }

    /**
     * The next bytes of the answer's body.
     *
     * @param data bytes read
     * @throws CoordsException.WireException BAD_CHUNK, OBJECT_MISMATCH
     * @throws CoordsException.ArgumentException FILE_IO
     */
    public void take(byte @NotNull [] data) {
        byte[] bytes = Ffi.bytes(data, "data", -1);
        if (bytes.length > 0) Ffi.call(e -> Ffi.LIB.coords_download_take(handle.get(), bytes, Ffi.size(bytes.length), e));
    }

    /**
     * How far the download is.
     *
     * @return plaintext bytes written of the file's size
     */
    public @NotNull Transfer.Progress progress() {
        LongByReference received = new LongByReference();
        LongByReference size = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_download_progress(handle.get(), received, size, e));
        return new Transfer.Progress(received.getValue(), size.getValue());
    }

    /**
     * After an answer's body ended.
     *
     * @return true when the whole file arrived and matched its digest (the descriptor is
     *     fsynced), false when it was cut off (send {@link #request()} again to resume)
     * @throws CoordsException.WireException OBJECT_MISMATCH (the digest does not match)
     */
    public boolean finish() {
        IntByReference complete = new IntByReference();
        Ffi.call(e -> Ffi.LIB.coords_download_finish(handle.get(), complete, e));
        return complete.getValue() != 0;
    }

    /** Frees the download (idempotent). */
    @Override
    public void close() {
        handle.run();
    }
}
