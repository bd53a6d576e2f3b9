package org.coordscore;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import java.io.Closeable;
import java.nio.charset.StandardCharsets;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * A file being sent ({@link CoordsApp#beginUpload}; PROTOCOL.md §12). The library reads the file
 * through the descriptor one part (at most 4 MiB) at a time; the host sends each request:
 *
 * <pre>{@code
 * try (FileUpload upload = app.beginUpload(fd)) {
 *     for (Request part = upload.next(); part != null; part = upload.next()) {
 *         HostLoop.Answer answer = HostLoop.perform(part);   // on status 0: perform(upload.probe())
 *         long wait = upload.process(answer.getStatus(), answer.getBody(), null);
 *         if (wait > 0) Thread.sleep(wait * 1000);
 *     }
 *     upload.send(friendId, "image/jpeg", "harbour.jpg", "caption");
 * }
 * }</pre>
 *
 * Close it when done; the descriptor stays the caller's.
 */
public final class FileUpload implements Closeable {
    private final Handle handle;

    FileUpload(Pointer pointer) {
        handle = new Handle("upload", pointer, Ffi.LIB::coords_upload_free);
        Handle.CLEANER.register(this, handle);
    }

    /**
     * The next part's signed PUT.
     *
     * @return the request, or null once the relay holds the whole file
     * @throws CoordsException.ArgumentException FILE_IO (the file could not be read or became shorter)
     */
    public @Nullable Request next() {
        IntByReference more = new IntByReference();
        byte[] body = Ffi.buffer((b, e) -> Ffi.LIB.coords_upload_next(handle.get(), more, b, e));
        return more.getValue() != 0 ? Request.fromJson(Json.parse(body)) : null;
    }

    /**
     * The empty PUT asking the relay where its bytes end: send it after a lost answer.
     *
     * @return the request
     */
    public @NotNull Request probe() {
        return Request.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_upload_probe(handle.get(), b, e)));
    }

    /**
     * Takes the relay's answer to the last part or probe.
     *
     * @param status the HTTP status
     * @param body the answer's body
     * @param retryAfter its Retry-After header, or null
     * @return 0, or the seconds to wait before {@link #next()} asks for the same part again (429, 5xx)
     * @throws CoordsException.WireException RELAY_ERROR (refused for good, e.g. the quota), OBJECT_MISMATCH (an answer no honest relay gives)
     */
    public long process(int status, byte @NotNull [] body, @Nullable String retryAfter) {
        LongByReference wait = new LongByReference();
        byte[] data = Ffi.bytes(body, "body", -1);
        Ffi.call(e -> Ffi.LIB.coords_upload_process(handle.get(), status, data, Ffi.size(data.length), Structs.cstr(retryAfter, "retryAfter"), wait, e));
        return wait.getValue();
    }

    /**
     * How far the upload is.
     *
     * @return bytes the relay holds of the file's size
     */
    public @NotNull Transfer.Progress progress() {
        LongByReference sent = new LongByReference();
        LongByReference size = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_upload_progress(handle.get(), sent, size, e));
        return new Transfer.Progress(sent.getValue(), size.getValue());
    }

    /**
     * A try failed: no answer ({@code retryAfterSeconds} 0), or {@link #process} asked to wait.
     *
     * @param retryAfterSeconds what process returned, or 0
     * @return wait and try again, or give up (14 failed tries in a row, or the deadline)
     */
    public @NotNull Transfer.Retry failed(long retryAfterSeconds) {
        LongByReference wait = new LongByReference();
        byte[] reason = Ffi.buffer((b, e) -> Ffi.LIB.coords_upload_failed(handle.get(), retryAfterSeconds, wait, b, e));
        return new Transfer.Retry(wait.getValue(), new String(reason, StandardCharsets.UTF_8));
    }

    /**
     * Seconds until the upload's deadline (at least 1): the timeout for the next request.
     *
     * @return seconds
     */
    public long secondsLeft() {
        LongByReference seconds = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_transfer_seconds_left(handle.get(), null, seconds, e));
        return seconds.getValue();
    }

    /**
     * Announces the finished upload to a friend (a file message, queued like a text).
     *
     * @param friendId the friend
     * @param type the MIME type
     * @param name the file's name
     * @param caption a caption (may be empty)
     * @return the stored message and its request
     * @throws CoordsException.WireException OBJECT_MISMATCH (not finished), MALFORMED_FILE (type or name)
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND, FRIEND_BLOCKED, MESSAGE_TOO_LONG
     */
    public @NotNull Sent send(@NotNull String friendId, @NotNull String type, @NotNull String name, @NotNull String caption) {
        return Sent.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_upload_send(handle.get(), Ffi.cstr(friendId, "friendId"), Ffi.cstr(type, "type"),
            Ffi.cstr(name, "name"), Ffi.cstr(caption, "caption"), b, e)));
    }

    /**
     * Announces the finished upload to a group (every member fetches the one object).
     *
     * @param group the group's id
     * @param type the MIME type
     * @param name the file's name
     * @param caption a caption (may be empty)
     * @return the stored message and the copies queued
     * @throws CoordsException as {@link #send}; ManagerException GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER
     */
    public @NotNull GroupSent sendGroup(@NotNull String group, @NotNull String type, @NotNull String name, @NotNull String caption) {
        return GroupSent.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_upload_send_group(handle.get(), Ffi.cstr(group, "group"), Ffi.cstr(type, "type"),
            Ffi.cstr(name, "name"), Ffi.cstr(caption, "caption"), b, e)));
    }

    /** Frees the upload (idempotent). */
    @Override
    public void close() {
        handle.run();
    }
}
