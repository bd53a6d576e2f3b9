package org.coordscore;

import com.sun.jna.CallbackThreadInitializer;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.Closeable;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * One CoordsCore data directory: the identity, friends, positions, messages, groups and the
 * outbox, sealed at rest. The same surface as the Python package's {@code App}.
 *
 * <p>Close it when done ({@code try (CoordsApp app = CoordsApp.open(...)) { … }}, or Kotlin's
 * {@code use}: it is a {@link Closeable}, whose {@code close} here throws no checked exception); an app that becomes unreachable without being closed is closed by a
 * {@link Cleaner} (on Android that needs API level 33; below it, close explicitly). After
 * {@link #close()} every method throws {@link CoordsException.ArgumentException} with
 * {@link ErrorCode#INVALID_HANDLE}. Methods may be called from any thread; each runs on the
 * calling thread (the core starts none of its own, except the update thread a listener asks for).
 *
 * <p>A host is one loop: {@code due()} → perform each request → {@code report()} → sleep until
 * {@link #nextWake()} (or a push / live notice, then {@link #fetchNow()}). {@link HostLoop}
 * does the turn with {@code HttpURLConnection}.
 */
public final class CoordsApp implements Closeable {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final System.Logger LOG = System.getLogger("org.coordscore");

    /** What the cleaner needs: never a reference to the app itself. */
    private static final class State implements Runnable {
        private Pointer handle;
        /** Kept reachable while the library may call them. */
        Structs.KeychainCallbacks keychain;
        Structs.UpdateCallback update;

        synchronized Pointer handle() {
            if (handle == null) throw CoordsException.of(ErrorCode.INVALID_HANDLE, "the app is closed");
            return handle;
        }

        @Override
        public void run() {
            Pointer closing;
            synchronized (this) {
                closing = handle;
                handle = null;
            }
            if (closing != null) Ffi.call(e -> Ffi.LIB.coords_app_close(closing, e));
            update = null;
            keychain = null;
        }
    }

    private final State state;
    private final Cleaner.Cleanable cleanable;

    private CoordsApp(State state) {
        this.state = state;
        this.cleanable = CLEANER.register(this, state);
    }

    /**
     * Opens (creating if needed) the app in {@code directory} with the file keychain sealed by
     * {@code passphrase}.
     *
     * @param directory the data directory (created 0700 when missing)
     * @param passphrase seals the keychain file
     * @param options more of coords_app_open's options: "keychain_cost", "backup_cost",
     *     "update_capacity", "durability", "places" (may be empty)
     * @return the open app
     * @throws CoordsException.ManagerException WRONG_PASSPHRASE, KEYCHAIN_*
     * @throws CoordsException.StoreException STORE_ALREADY_OPEN (open in this process), STORE_OPEN_FAILED, STORE_CORRUPTED, …
     */
    public static @NotNull CoordsApp open(@NotNull String directory, @NotNull String passphrase, @NotNull Map<String, Object> options) {
        Map<String, Object> all = new LinkedHashMap<>(options);
        all.put("passphrase", passphrase);
        return openWith(directory, all, null);
    }

    /**
     * Opens the app with the file keychain sealed by a 32-byte key (from the platform keystore).
     *
     * @param directory the data directory
     * @param key 32 bytes
     * @param options as for {@link #open(String, String, Map)}
     * @return the open app
     * @throws CoordsException as {@link #open(String, String, Map)}; INVALID_LENGTH for a key of another length
     */
    public static @NotNull CoordsApp open(@NotNull String directory, byte @NotNull [] key, @NotNull Map<String, Object> options) {
        Map<String, Object> all = new LinkedHashMap<>(options);
        all.put("key_base64", Base64.getEncoder().encodeToString(Ffi.bytes(key, "key", 32)));
        return openWith(directory, all, null);
    }

    /**
     * Opens the app with its secrets in the host's {@code keychain}.
     *
     * @param directory the data directory
     * @param keychain where the secrets live (kept reachable by the app until it is closed)
     * @param options as for {@link #open(String, String, Map)}
     * @return the open app
     * @throws CoordsException as {@link #open(String, String, Map)}; HOST_KEYCHAIN when the keychain fails
     */
    public static @NotNull CoordsApp open(@NotNull String directory, @NotNull Keychain keychain, @NotNull Map<String, Object> options) {
        return openWith(directory, new LinkedHashMap<>(options), keychain);
    }

    private static CoordsApp openWith(String directory, Map<String, Object> options, Keychain keychain) {
        State state = new State();
        PointerByReference out = new PointerByReference();
        byte[] dir = Ffi.cstr(directory, "directory");
        byte[] json = Ffi.cstr(Json.write(options), "options");
        if (keychain == null) {
            Ffi.call(e -> Ffi.LIB.coords_app_open(dir, json, out, e));
        } else {
            state.keychain = bridge(keychain);
            Ffi.call(e -> Ffi.LIB.coords_app_open_with_keychain(dir, json, state.keychain, out, e));
        }
        state.handle = out.getValue();
        return new CoordsApp(state);
    }

    private static Structs.KeychainCallbacks bridge(Keychain keychain) {
        Structs.KeychainCallbacks table = new Structs.KeychainCallbacks();
        table.save = (context, name, secret, length) -> {
            try {
                keychain.save(Ffi.utf8(name), secret == null ? new byte[0] : secret.getByteArray(0, (int) length.longValue()));
                return 0;
            } catch (Throwable error) {
                LOG.log(System.Logger.Level.ERROR, "the host keychain's save failed", error);
                return 3;
            }
        };
        table.load = (context, name, target, capacity, length) -> {
            try {
                byte[] secret = keychain.load(Ffi.utf8(name));
                if (secret == null) return 1;
                if (secret.length > capacity.longValue()) return 2;
                target.write(0, secret, 0, secret.length);
                if (com.sun.jna.Native.SIZE_T_SIZE == 8) length.setLong(0, secret.length);
                else length.setInt(0, secret.length);
                return 0;
            } catch (Throwable error) {
                LOG.log(System.Logger.Level.ERROR, "the host keychain's load failed", error);
                return 3;
            }
        };
        table.remove = (context, name) -> {
            try {
                keychain.remove(Ffi.utf8(name));
                return 0;
            } catch (Throwable error) {
                LOG.log(System.Logger.Level.ERROR, "the host keychain's remove failed", error);
                return 3;
            }
        };
        table.write();
        return table;
    }

    /**
     * Closes the app (idempotent): stops the update thread, releases the store. Later calls
     * throw INVALID_HANDLE.
     *
     * @throws CoordsException StoreException when the store fails to close cleanly
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    /**
     * Whether {@link #close()} was called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        synchronized (state) {
            return state.handle == null;
        }
    }

    private Pointer handle() {
        return state.handle();
    }

    private Object json(Ffi.BufferCall call) {
        return Ffi.json(call);
    }

    private static <T> List<T> list(Object value, Function<Object, T> read) {
        if (!(value instanceof List)) throw CoordsException.of(ErrorCode.UNEXPECTED_JSON, "expected a JSON array");
        List<T> out = new ArrayList<>();
        for (Object item : (List<?>) value) out.add(read.apply(item));
        return out;
    }

    private static byte[] body(byte[] body) {
        return Ffi.bytes(body, "body", -1);
    }

    // ---- Updates --------------------------------------------------------------------------------

    /**
     * The next update, waiting up to {@code timeoutMs} (0: do not wait, -1: wait until one comes).
     *
     * @param timeoutMs how long to wait
     * @return the update's JSON object, or null when none came in time
     * @throws CoordsException.ChannelException CLOSED when the app closed while waiting
     */
    public @Nullable Map<String, Object> nextUpdate(long timeoutMs) {
        Pointer app = handle();
        try {
            return Json.asObject(json((b, e) -> Ffi.LIB.coords_app_next_update(app, timeoutMs, b, e)), "update");
        } catch (CoordsException.ChannelException error) {
            if (error.code() == ErrorCode.TIMED_OUT) return null;
            throw error;
        }
    }

    /**
     * Every update queued right now.
     *
     * @return the updates, oldest first
     */
    public @NotNull List<Map<String, Object>> updates() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map<String, Object> update = nextUpdate(0); update != null; update = nextUpdate(0)) out.add(update);
        return out;
    }

    /**
     * Calls {@code listener} for every update on the library's update thread (see
     * {@link UpdateListener}); null stops it. An exception the listener throws cannot travel
     * through C: it goes to {@code onError} when given, and otherwise to the
     * "org.coordscore" System.Logger at ERROR with its stack trace. Either way the next update
     * still arrives.
     *
     * @param listener the listener, or null to stop
     * @param onError receives what the listener threw (may be null)
     * @throws CoordsException.ArgumentException INVALID_HANDLE once closed
     */
    public void setUpdateListener(@Nullable UpdateListener listener, @Nullable Consumer<Throwable> onError) {
        Pointer app = handle();
        if (listener == null) {
            Ffi.call(e -> Ffi.LIB.coords_app_set_update_callback(app, null, null, e));
            state.update = null;
            return;
        }
        Structs.UpdateCallback callback = (context, data, length) -> {
            try {
                byte[] bytes = data == null ? new byte[0] : data.getByteArray(0, (int) length.longValue());
                listener.onUpdate(Json.asObject(Json.parse(bytes), "update"));
            } catch (Throwable error) {
                try {
                    if (onError != null) onError.accept(error);
                    else LOG.log(System.Logger.Level.ERROR, "an update listener threw", error);
                } catch (Throwable second) {
                    LOG.log(System.Logger.Level.ERROR, "an update listener's onError threw", second);
                }
            }
        };
        com.sun.jna.Native.setCallbackThreadInitializer(callback, new CallbackThreadInitializer(true, false, "coordscore-updates"));
        Ffi.call(e -> Ffi.LIB.coords_app_set_update_callback(app, callback, null, e));
        // The previous callback is released only now: the library has stopped the thread that called it.
        state.update = callback;
    }

    // ---- Wallet ---------------------------------------------------------------------------------

    /**
     * Creates the identity of this data directory.
     *
     * @param name the display name friends see
     * @param server the relay's https URL
     * @return the new id (base64url)
     * @throws CoordsException.ManagerException IDENTITY_EXISTS
     * @throws CoordsException.WireException INVALID_SERVER_URL
     */
    public @NotNull String createIdentity(@NotNull String name, @NotNull String server) {
        Pointer app = handle();
        return Ffi.text((b, e) -> Ffi.LIB.coords_wallet_create_identity(app, Ffi.cstr(name, "name"), Ffi.cstr(server, "server"), b, e));
    }

    /**
     * Imports an identity from its 32-byte seed.
     *
     * @param seed 32 bytes
     * @param name the display name
     * @param server the relay's https URL
     * @return the id
     * @throws CoordsException.ManagerException IDENTITY_EXISTS
     */
    public @NotNull String importSeed(byte @NotNull [] seed, @NotNull String name, @NotNull String server) {
        Pointer app = handle();
        return Ffi.text((b, e) -> Ffi.LIB.coords_wallet_import_seed(app, Ffi.bytes(seed, "seed", 32), Ffi.cstr(name, "name"),
            Ffi.cstr(server, "server"), b, e));
    }

    /**
     * Changes the display name and/or relay (null leaves one as it is).
     *
     * @param name the new name, or null
     * @param server the new relay, or null
     * @throws CoordsException.ManagerException NO_IDENTITY
     */
    public void setProfile(@Nullable String name, @Nullable String server) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_wallet_set_profile(app, Structs.cstr(name, "name"), Structs.cstr(server, "server"), e));
    }

    /**
     * Strict mode: refuse positions that are not verified as the friend's.
     *
     * @param strict on or off
     */
    public void setStrictMode(boolean strict) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_wallet_set_strict_mode(app, strict, e));
    }

    /**
     * The identity and profile.
     *
     * @return the wallet's record
     */
    public @NotNull WalletInfo info() {
        Pointer app = handle();
        return WalletInfo.fromJson(json((b, e) -> Ffi.LIB.coords_wallet_info(app, b, e)));
    }

    /**
     * The identity's public key.
     *
     * @return 32 bytes
     * @throws CoordsException.ManagerException NO_IDENTITY
     */
    public byte @NotNull [] publicKey() {
        Pointer app = handle();
        byte[] out = new byte[32];
        Ffi.call(e -> Ffi.LIB.coords_wallet_public_key(app, out, e));
        return out;
    }

    /**
     * The identity's {@code coord://} friend link (show it, or its QR code).
     *
     * @return the link
     * @throws CoordsException.ManagerException NO_IDENTITY, NO_SERVER
     */
    public @NotNull String friendLink() {
        Pointer app = handle();
        return Ffi.text((b, e) -> Ffi.LIB.coords_wallet_friend_link(app, b, e));
    }

    /**
     * The safety number to compare in person with a friend.
     *
     * @param friendPublic the friend's 32-byte public key
     * @return 30 digits in six groups
     */
    public @NotNull String safetyNumber(byte @NotNull [] friendPublic) {
        Pointer app = handle();
        return Ffi.text((b, e) -> Ffi.LIB.coords_wallet_safety_number(app, Ffi.bytes(friendPublic, "friendPublic", 32), b, e));
    }

    /**
     * Signs {@code message} with the identity.
     *
     * @param message the bytes (at most 16 MiB)
     * @return 64 bytes
     * @throws CoordsException.ManagerException NO_IDENTITY
     */
    public byte @NotNull [] sign(byte @NotNull [] message) {
        Pointer app = handle();
        byte[] m = Ffi.bytes(message, "message", -1);
        byte[] out = new byte[64];
        Ffi.call(e -> Ffi.LIB.coords_wallet_sign(app, m, Ffi.size(m.length), out, e));
        return out;
    }

    /**
     * The identity and friends as an encrypted backup.
     *
     * @param passphrase seals the backup
     * @return the backup's bytes
     */
    public byte @NotNull [] exportBackup(@NotNull String passphrase) {
        Pointer app = handle();
        return Ffi.buffer((b, e) -> Ffi.LIB.coords_wallet_export_backup(app, Ffi.cstr(passphrase, "passphrase"), b, e));
    }

    /**
     * Restores a backup into this (empty) data directory.
     *
     * @param backup the backup's bytes
     * @param passphrase its passphrase
     * @return the restored id
     * @throws CoordsException.ManagerException WRONG_BACKUP_PASSPHRASE, INVALID_BACKUP, IDENTITY_EXISTS
     */
    public @NotNull String importBackup(byte @NotNull [] backup, @NotNull String passphrase) {
        Pointer app = handle();
        byte[] data = Ffi.bytes(backup, "backup", -1);
        return Ffi.text((b, e) -> Ffi.LIB.coords_wallet_import_backup(app, data, Ffi.size(data.length), Ffi.cstr(passphrase, "passphrase"), b, e));
    }

    // ---- Friends --------------------------------------------------------------------------------

    /**
     * Adds the friend a {@code coord://} link names.
     *
     * @param link the link
     * @return the friend
     * @throws CoordsException.WireException INVALID_FRIEND_LINK
     * @throws CoordsException.ManagerException CANNOT_ADD_SELF
     */
    public @NotNull Friend addFriendLink(@NotNull String link) {
        Pointer app = handle();
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_add_link(app, Ffi.cstr(link, "link"), b, e)));
    }

    /**
     * Adds a friend by id and relay.
     *
     * @param id their id (base64url public key)
     * @param server their relay
     * @param name a display name (may be empty)
     * @param shareWith whether to share our position with them
     * @param fetchFrom whether to fetch theirs
     * @return the friend
     * @throws CoordsException.WireException INVALID_PUBLIC_KEY_ID, INVALID_SERVER_URL
     */
    public @NotNull Friend addFriend(@NotNull String id, @NotNull String server, @NotNull String name, boolean shareWith, boolean fetchFrom) {
        Pointer app = handle();
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("id", id);
        record.put("server", server);
        record.put("name", name);
        record.put("share_with", shareWith);
        record.put("fetch_from", fetchFrom);
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_add(app, Ffi.cstr(Json.write(record), "friend"), b, e)));
    }

    /**
     * Changes a friend's fields ("name", "server", "share_with", "fetch_from", "trust", "marker_color").
     *
     * @param id the friend
     * @param changes the fields to change
     * @return the friend as stored
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND
     */
    public @NotNull Friend updateFriend(@NotNull String id, @NotNull Map<String, Object> changes) {
        Pointer app = handle();
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_update(app, Ffi.cstr(id, "id"), Ffi.cstr(Json.write(changes), "changes"), b, e)));
    }

    /**
     * Removes a friend; the core queues the reseal that stops them reading our last position.
     *
     * @param id the friend
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND
     */
    public void removeFriend(@NotNull String id) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_friends_remove(app, Ffi.cstr(id, "id"), e));
    }

    /**
     * Shares our position with a friend, until {@code untilMs} (null: no end).
     *
     * @param id the friend
     * @param untilMs when the share ends, ms since the epoch, or null
     * @return the friend
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND
     */
    public @NotNull Friend shareWith(@NotNull String id, @Nullable Long untilMs) {
        Pointer app = handle();
        long until = untilMs == null ? 0 : untilMs;
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_share(app, Ffi.cstr(id, "id"), until, b, e)));
    }

    /**
     * Pauses sharing with a friend; the core queues the reseal.
     *
     * @param id the friend
     * @return the friend
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND
     */
    public @NotNull Friend pause(@NotNull String id) {
        Pointer app = handle();
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_pause(app, Ffi.cstr(id, "id"), b, e)));
    }

    /**
     * Settles a key conflict by keeping one of the candidate keys.
     *
     * @param id the friend
     * @param keep the key to keep (one of conflictKeys)
     * @return the friend
     * @throws CoordsException.ManagerException NOT_IN_CONFLICT, FRIEND_NOT_FOUND
     */
    public @NotNull Friend resolveConflict(@NotNull String id, @NotNull String keep) {
        Pointer app = handle();
        return Friend.fromJson(json((b, e) -> Ffi.LIB.coords_friends_resolve_conflict(app, Ffi.cstr(id, "id"), Ffi.cstr(keep, "keep"), b, e)));
    }

    /**
     * Every friend.
     *
     * @return the friends
     */
    public @NotNull List<Friend> friends() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_friends_list(app, b, e)), Friend::fromJson);
    }

    // ---- Location -------------------------------------------------------------------------------

    /**
     * Seals and signs {@code fix} for us and every friend we share with (send the request, then
     * {@link #markUploadSucceeded}); prefer {@link #queueUpload}, which the host loop delivers.
     *
     * @param fix the position
     * @return the prepared upload
     * @throws CoordsException.WireException INVALID_LOCATION
     * @throws CoordsException.ManagerException NO_IDENTITY, FIX_IN_FUTURE
     */
    public @NotNull Upload prepareUpload(@NotNull Location fix) {
        Pointer app = handle();
        Structs.Location c = fix.toC();
        return Upload.fromJson(json((b, e) -> Ffi.LIB.coords_location_prepare_upload(app, c, b, e)));
    }

    /**
     * Records that the upload of the fix taken at {@code fixTimestampMs} reached the relay.
     *
     * @param fixTimestampMs the fix's time
     * @throws CoordsException.ManagerException UNKNOWN_UPLOAD
     */
    public void markUploadSucceeded(long fixTimestampMs) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_location_mark_upload_succeeded(app, fixTimestampMs, e));
    }

    /**
     * The fetch requests for every friend we fetch from (at most 50 ids each).
     *
     * @return the requests
     */
    public @NotNull List<Request> prepareFetches() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_location_prepare_fetches(app, b, e)), Request::fromJson);
    }

    /**
     * Verifies, opens and stores a fetch response's positions.
     *
     * @param body the relay's answer
     * @return what changed
     * @throws CoordsException.WireException INVALID_JSON, UNEXPECTED_JSON for an answer that is not one
     */
    public @NotNull FetchOutcome processFetchResponse(byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        return FetchOutcome.fromJson(json((b, e) -> Ffi.LIB.coords_location_process_fetch_response(app, data, Ffi.size(data.length), b, e)));
    }

    /**
     * Every friend's last known position, with its place name.
     *
     * @return the positions
     */
    public @NotNull List<FriendLocation> friendLocations() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_location_friend_locations(app, b, e)), FriendLocation::fromJson);
    }

    // ---- Outbox and the one wake ----------------------------------------------------------------

    /**
     * Queues {@code fix}'s upload in the outbox (the host loop delivers it, retries it, and signs
     * it again when it grows stale).
     *
     * @param fix the position
     * @return the upload and its outbox id
     * @throws CoordsException as {@link #prepareUpload}; WireException STALE_LOCATION
     */
    public @NotNull QueuedUpload queueUpload(@NotNull Location fix) {
        Pointer app = handle();
        Structs.Location c = fix.toC();
        Map<String, Object> record = Json.asObject(json((b, e) -> Ffi.LIB.coords_outbox_queue_upload(app, c, b, e)), "queued upload");
        return new QueuedUpload(Upload.fromJson(record), Json.longValue(record, "outbox_id"));
    }

    /**
     * The outbox.
     *
     * @param dueOnly only the entries due now
     * @return the entries
     */
    public @NotNull List<OutboxEntry> outbox(boolean dueOnly) {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_outbox_pending(app, dueOnly, b, e)), OutboxEntry::fromJson);
    }

    /**
     * When to call {@link #due} next, ms since the epoch (at or before now when something is due
     * already), or null when nothing will be due without a call from the host.
     *
     * @return the time, or null
     */
    public @Nullable Long nextWake() {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_app_next_wake(app, out, e));
        return out.getValue() == 0 ? null : out.getValue();
    }

    /**
     * Everything to perform now, each request signed now; the local work that is due (sweeps,
     * the reseal a share's end owes) is done first. Perform each request and hand the answer to
     * {@link #report}. A request is not handed out again until reported (or for 2 minutes).
     *
     * @param nowMs the time now, ms since the epoch, or 0 for the clock's
     * @return the requests
     */
    public @NotNull List<HostRequest> due(long nowMs) {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_app_due(app, nowMs, b, e)), HostRequest::fromJson);
    }

    /**
     * Hands the answer to request {@code id} (from {@link #due}) to the core, which does
     * everything it implies. A request that got no answer is reported with status 0 and the
     * failure's description as the body.
     *
     * @param id the request's ticket
     * @param status the HTTP status, or 0
     * @param body the answer's body
     * @return what the core made of it
     */
    public @NotNull HostAnswer report(long id, int status, byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        return HostAnswer.fromJson(json((b, e) -> Ffi.LIB.coords_app_report(app, id, status, data, Ffi.size(data.length), b, e)));
    }

    /** Makes the next {@link #due} fetch positions and read the mailbox (after a push or live notice). */
    public void fetchNow() {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_app_fetch_now(app, e));
    }

    /**
     * How often {@link #due} fetches positions and reads the mailbox by itself.
     *
     * @param intervalMs milliseconds (at least 1000; the default is 60000), or null for only after {@link #fetchNow}
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT for a negative interval
     */
    public void setFetchInterval(@Nullable Long intervalMs) {
        if (intervalMs != null && intervalMs < 0) throw CoordsException.of(ErrorCode.INVALID_ARGUMENT, "intervalMs must not be negative");
        Pointer app = handle();
        long interval = intervalMs == null ? 0 : intervalMs;
        Ffi.call(e -> Ffi.LIB.coords_app_set_fetch_interval(app, interval, e));
    }

    // ---- Messages -------------------------------------------------------------------------------

    /**
     * Sends a text to a friend: sealed, stored and queued in the outbox.
     *
     * @param friendId the friend
     * @param text the text
     * @return the stored message and its request
     * @throws CoordsException.ManagerException FRIEND_NOT_FOUND, FRIEND_BLOCKED, MESSAGE_TOO_LONG
     */
    public @NotNull Sent sendMessage(@NotNull String friendId, @NotNull String text) {
        Pointer app = handle();
        return Sent.fromJson(json((b, e) -> Ffi.LIB.coords_messages_send(app, Ffi.cstr(friendId, "friendId"), Ffi.cstr(text, "text"), b, e)));
    }

    /**
     * The conversations, newest first.
     *
     * @return one per friend with messages
     */
    public @NotNull List<Conversation> conversations() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_messages_conversations(app, b, e)), Conversation::fromJson);
    }

    /**
     * The messages with a friend, oldest first.
     *
     * @param friendId the friend
     * @param limit at most this many of the newest (0: all)
     * @return the messages
     */
    public @NotNull List<Message> history(@NotNull String friendId, int limit) {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_messages_history(app, Ffi.cstr(friendId, "friendId"), limit, b, e)), Message::fromJson);
    }

    // ---- Groups ---------------------------------------------------------------------------------

    /**
     * Creates a group with friends as members.
     *
     * @param name the group's name
     * @param members friends' ids
     * @return the group and the statements queued
     * @throws CoordsException.ManagerException INVALID_GROUP_MEMBERS, TOO_MANY_GROUPS
     */
    public @NotNull GroupChange createGroup(@NotNull String name, @NotNull List<String> members) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_create(app, Ffi.cstr(name, "name"), Ffi.cstr(Json.write(members), "members"), b, e)));
    }

    /**
     * Adds members (admins only).
     *
     * @param group the group's id
     * @param members friends' ids
     * @return the group and the statements queued
     * @throws CoordsException.ManagerException GROUP_NOT_FOUND, NOT_A_GROUP_ADMIN
     */
    public @NotNull GroupChange addToGroup(@NotNull String group, @NotNull List<String> members) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_add(app, Ffi.cstr(group, "group"), Ffi.cstr(Json.write(members), "members"), b, e)));
    }

    /**
     * Removes members (admins only).
     *
     * @param group the group's id
     * @param members members' ids
     * @return the group and the statements queued
     * @throws CoordsException.ManagerException GROUP_NOT_FOUND, NOT_A_GROUP_ADMIN
     */
    public @NotNull GroupChange removeFromGroup(@NotNull String group, @NotNull List<String> members) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_remove(app, Ffi.cstr(group, "group"), Ffi.cstr(Json.write(members), "members"), b, e)));
    }

    /**
     * Leaves a group.
     *
     * @param group the group's id
     * @return the group and the statement queued
     * @throws CoordsException.ManagerException GROUP_NOT_FOUND
     */
    public @NotNull GroupChange leaveGroup(@NotNull String group) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_leave(app, Ffi.cstr(group, "group"), b, e)));
    }

    /**
     * Sends a text to a group: sealed once with our sender chain, one copy queued per member who is a friend.
     *
     * @param group the group's id
     * @param text the text
     * @return the stored message, the copies queued and who could not be reached
     * @throws CoordsException.ManagerException GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER, GROUP_MESSAGE_TOO_LONG
     */
    public @NotNull GroupSent sendGroupMessage(@NotNull String group, @NotNull String text) {
        Pointer app = handle();
        return GroupSent.fromJson(json((b, e) -> Ffi.LIB.coords_groups_send(app, Ffi.cstr(group, "group"), Ffi.cstr(text, "text"), b, e)));
    }

    /**
     * Every group.
     *
     * @return the groups
     */
    public @NotNull List<Group> groups() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_groups_list(app, b, e)), Group::fromJson);
    }

    /**
     * A group's messages, oldest first.
     *
     * @param group the group's id
     * @param limit at most this many of the newest (0: all)
     * @return the messages
     * @throws CoordsException.ManagerException GROUP_NOT_FOUND
     */
    public @NotNull List<Message> groupHistory(@NotNull String group, int limit) {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_groups_history(app, Ffi.cstr(group, "group"), limit, b, e)), Message::fromJson);
    }

    // ---- More of the wallet, location and outbox --------------------------------------------------

    /**
     * Rotates the identity (PROTOCOL.md §9.1); {@code revoke} declares the old key compromised (§9.2).
     *
     * @param server the relay for the new key, or null for the same
     * @param revoke whether the old key is compromised
     * @return the new id, the statements queued, the upload under the new key and the old blob's delete
     * @throws CoordsException.ManagerException NO_IDENTITY, NO_SERVER
     * @throws CoordsException.WireException INVALID_SERVER_URL
     */
    public @NotNull Rotation rotate(@Nullable String server, boolean revoke) {
        Pointer app = handle();
        return Rotation.fromJson(json((b, e) -> Ffi.LIB.coords_wallet_rotate(app, Structs.cstr(server, "server"), revoke, b, e)));
    }

    /**
     * The ids this identity had before its rotations, newest first.
     *
     * @return the ids
     */
    public @NotNull List<String> previousIdentities() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_wallet_previous_identities(app, b, e)), Json::asString);
    }

    /**
     * Re-queues the pending rotation statement for friends still waiting for it.
     *
     * @return the entries queued
     */
    public @NotNull List<OutboxEntry> queueRotationStatements() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_messages_queue_rotation_statements(app, b, e)), OutboxEntry::fromJson);
    }

    /**
     * The reseal the last upload owes after a share changed (the host loop does this by itself).
     *
     * @param force reseal even when nothing changed
     * @return the upload, or null when none is owed
     */
    public @Nullable Upload prepareReseal(boolean force) {
        Pointer app = handle();
        Object value = json((b, e) -> Ffi.LIB.coords_location_prepare_reseal(app, force, b, e));
        return value == null ? null : Upload.fromJson(value);
    }

    /**
     * When the next share ends, ms since the epoch ({@link #nextWake()} includes it).
     *
     * @return the time, or null
     */
    public @Nullable Long nextShareExpiry() {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_location_next_share_expiry(app, out, e));
        return out.getValue() == 0 ? null : out.getValue();
    }

    /**
     * The signed request deleting our blob from the relay.
     *
     * @return the request
     * @throws CoordsException.ManagerException NO_IDENTITY
     */
    public @NotNull Request prepareDelete() {
        Pointer app = handle();
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_location_prepare_delete(app, b, e)));
    }

    /**
     * Records that an upload failed.
     *
     * @param fixTimestampMs the fix's time
     * @param reason why
     * @throws CoordsException.ManagerException UNKNOWN_UPLOAD
     */
    public void markUploadFailed(long fixTimestampMs, @NotNull String reason) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_location_mark_upload_failed(app, fixTimestampMs, Ffi.cstr(reason, "reason"), e));
    }

    /**
     * Queues a prepared request in the outbox.
     *
     * @param kind "upload", "reseal", "delete", "message", "receipt", "rotation" or "request"
     * @param request the request
     * @param reference an upload's fix timestamp, a message's id or a rotation's friend id, or null
     * @return its id (ids are never reused)
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT for an unknown kind
     */
    public long enqueue(@NotNull String kind, @NotNull Request request, @Nullable String reference) {
        Pointer app = handle();
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("url", request.getUrl());
        record.put("method", request.getMethod());
        record.put("headers", request.getHeaders());
        record.put("body_base64", request.getBodyBase64());
        if (request.getMaxResponseBytes() != null) record.put("max_response_bytes", request.getMaxResponseBytes());
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_outbox_enqueue(app, Ffi.cstr(kind, "kind"), Ffi.cstr(Json.write(record), "request"),
            Structs.cstr(reference, "reference"), out, e));
        return out.getValue();
    }

    /**
     * The outbox's requests to send now (the host loop's {@link #due} includes them).
     *
     * @param ignoreBackoff hand out entries still waiting after a failure too (a person asked now)
     * @return the entries
     */
    public @NotNull List<OutboxEntry> outboxDue(boolean ignoreBackoff) {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_outbox_due(app, ignoreBackoff, b, e)), OutboxEntry::fromJson);
    }

    /**
     * Hands the answer to an outbox entry's request to the core.
     *
     * @param id the entry
     * @param status the HTTP status, or 0 for no answer
     * @param body the answer's body
     * @return the entry's fate
     */
    public @NotNull OutboxReport outboxReport(long id, int status, byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        return OutboxReport.fromJson(json((b, e) -> Ffi.LIB.coords_outbox_report(app, id, status, data, Ffi.size(data.length), b, e)));
    }

    /**
     * When to call {@link #outboxDue} next, or null when the outbox is empty.
     *
     * @return the time, ms since the epoch, or null
     */
    public @Nullable Long outboxNextWake() {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_outbox_next_wake(app, out, e));
        return out.getValue() == 0 ? null : out.getValue();
    }

    /**
     * Marks an outbox entry delivered (it leaves the outbox).
     *
     * @param id the entry
     */
    public void markDelivered(long id) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_outbox_mark_delivered(app, id, e));
    }

    /**
     * Marks an outbox entry failed (it backs off).
     *
     * @param id the entry
     * @param reason why
     */
    public void markFailed(long id, @NotNull String reason) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_outbox_mark_failed(app, id, Ffi.cstr(reason, "reason"), e));
    }

    /**
     * Removes an outbox entry unsent.
     *
     * @param id the entry
     */
    public void removeQueued(long id) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_outbox_remove(app, id, e));
    }

    /**
     * Rotates the store's key (everything sealed again under a new one).
     *
     * @throws CoordsException.StoreException when the store fails
     */
    public void rekey() {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_app_rekey(app, e));
    }

    // ---- More of the messages -------------------------------------------------------------------

    /**
     * Begins sending a file read through the descriptor {@code fd} (Android:
     * {@code ParcelFileDescriptor.getFd()}); the descriptor stays the caller's.
     *
     * @param fd an open, readable file descriptor
     * @return the upload
     * @throws CoordsException.ArgumentException FILE_IO
     */
    public @NotNull FileUpload beginUpload(int fd) {
        Pointer app = handle();
        PointerByReference out = new PointerByReference();
        Ffi.call(e -> Ffi.LIB.coords_upload_begin(app, fd, out, e));
        return new FileUpload(out.getValue());
    }

    /**
     * Begins receiving a file message's attachment into the descriptor {@code fd}.
     *
     * @param messageId the file message
     * @param fd an open, writable file descriptor
     * @return the download
     * @throws CoordsException.ManagerException UNKNOWN_MESSAGE, NO_ATTACHMENT
     */
    public @NotNull FileDownload beginDownload(@NotNull String messageId, int fd) {
        Pointer app = handle();
        PointerByReference out = new PointerByReference();
        Ffi.call(e -> Ffi.LIB.coords_download_begin(app, Ffi.cstr(messageId, "messageId"), fd, out, e));
        return new FileDownload(out.getValue());
    }

    /**
     * Marks a queued message sent (a host that delivered it itself).
     *
     * @param messageId the message
     * @throws CoordsException.ManagerException UNKNOWN_MESSAGE
     */
    public void markMessageSent(@NotNull String messageId) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_messages_mark_sent(app, Ffi.cstr(messageId, "messageId"), e));
    }

    /**
     * The signed request listing our mailbox (the host loop's {@link #due} includes it).
     *
     * @return the request
     */
    public @NotNull Request prepareMessageFetch() {
        Pointer app = handle();
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_messages_prepare_fetch(app, b, e)));
    }

    /**
     * Processes a mailbox answer: messages, receipts, rotations, group traffic.
     *
     * @param body the relay's answer
     * @return what arrived and what was refused
     * @throws CoordsException.ManagerException INVALID_MAILBOX_RESPONSE
     */
    public @NotNull MessagesOutcome processMessages(byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        return MessagesOutcome.fromJson(json((b, e) -> Ffi.LIB.coords_messages_process_fetch_response(app, data, Ffi.size(data.length), b, e)));
    }

    /**
     * A signed registration of a push endpoint at our relay (PROTOCOL.md §8.7); the core renews it.
     *
     * @param endpoint an https:// push URL (http:// only for a loopback host)
     * @param ttlSeconds the registration's lifetime, or null for the relay's default (7 days)
     * @return the request
     * @throws CoordsException.ManagerException INVALID_PUSH_ENDPOINT, NO_IDENTITY, NO_SERVER
     */
    public @NotNull Request preparePushRegister(@NotNull String endpoint, @Nullable Long ttlSeconds) {
        Pointer app = handle();
        long ttl = ttlSeconds == null ? 0 : ttlSeconds;
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_messages_prepare_push_register(app, Ffi.cstr(endpoint, "endpoint"), ttl, b, e)));
    }

    /**
     * A signed removal of our push registration.
     *
     * @return the request
     */
    public @NotNull Request preparePushUnregister() {
        Pointer app = handle();
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_messages_prepare_push_unregister(app, b, e)));
    }

    /**
     * Deletes local copies of a conversation's messages after {@code seconds}.
     *
     * @param friendId the friend
     * @param seconds the lifetime, or null to keep messages
     */
    public void setDisappearing(@NotNull String friendId, @Nullable Long seconds) {
        Pointer app = handle();
        long after = seconds == null ? 0 : seconds;
        Ffi.call(e -> Ffi.LIB.coords_messages_set_disappearing(app, Ffi.cstr(friendId, "friendId"), after, e));
    }

    /**
     * Mutes a conversation (a friend's id or a group's) until {@code untilMs}; messages still
     * arrive, they do not notify.
     *
     * @param conversation a friend's or group's id
     * @param untilMs until when, ms since the epoch, or null for until unmuted
     * @throws CoordsException.ManagerException UNKNOWN_CONVERSATION
     */
    public void mute(@NotNull String conversation, @Nullable Long untilMs) {
        if (untilMs != null && untilMs <= 0) throw CoordsException.of(ErrorCode.INVALID_ARGUMENT, "untilMs must be positive (unmute() ends a mute)");
        Pointer app = handle();
        long until = untilMs == null ? -1L : untilMs;  // -1: UINT64_MAX, until unmuted
        Ffi.call(e -> Ffi.LIB.coords_messages_mute(app, Ffi.cstr(conversation, "conversation"), until, e));
    }

    /**
     * Ends a mute.
     *
     * @param conversation a friend's or group's id
     * @throws CoordsException.ManagerException UNKNOWN_CONVERSATION
     */
    public void unmute(@NotNull String conversation) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_messages_mute(app, Ffi.cstr(conversation, "conversation"), 0, e));
    }

    /**
     * Until when a conversation is muted.
     *
     * @param conversation a friend's or group's id
     * @return ms since the epoch (-1, i.e. UINT64_MAX: until unmuted), or null when not muted
     * @throws CoordsException.ManagerException UNKNOWN_CONVERSATION
     */
    public @Nullable Long mutedUntil(@NotNull String conversation) {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_messages_muted_until(app, Ffi.cstr(conversation, "conversation"), out, e));
        return out.getValue() == 0 ? null : out.getValue();
    }

    /**
     * Quiet hours "HH:MM-HH:MM" in local time {@code utcOffsetMinutes} from UTC: no message
     * received inside the window notifies.
     *
     * @param window the window, or null for off
     * @param utcOffsetMinutes the local offset (at most 14 hours either way)
     * @throws CoordsException.ManagerException INVALID_QUIET_HOURS
     */
    public void setQuietHours(@Nullable String window, int utcOffsetMinutes) {
        Pointer app = handle();
        if (window == null) {
            Ffi.call(e -> Ffi.LIB.coords_messages_set_quiet_hours(app, -1, 0, 0, e));
            return;
        }
        IntByReference start = new IntByReference();
        IntByReference end = new IntByReference();
        Ffi.call(e -> Ffi.LIB.coords_quiet_hours_parse(Ffi.cstr(window, "window"), start, end, e));
        if (utcOffsetMinutes < -840 || utcOffsetMinutes > 840) {
            throw CoordsException.of(ErrorCode.INVALID_QUIET_HOURS, "invalid quiet hours: the offset from UTC is at most 14 hours either way");
        }
        Ffi.call(e -> Ffi.LIB.coords_messages_set_quiet_hours(app, start.getValue(), end.getValue(), utcOffsetMinutes, e));
    }

    /**
     * Whether to send delivery receipts.
     *
     * @param on on or off
     */
    public void setDeliveryReceipts(boolean on) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_messages_set_receipts(app, on ? 1 : 0, e));
    }

    /**
     * The notification settings (quiet hours, receipts, mutes).
     *
     * @return the policy's JSON object
     */
    public @NotNull Map<String, Object> notificationPolicy() {
        Pointer app = handle();
        return Json.asObject(json((b, e) -> Ffi.LIB.coords_messages_notification_policy(app, b, e)), "policy");
    }

    /**
     * Deletes messages past their disappearing time (the host loop does this by itself).
     *
     * @return their ids
     */
    public @NotNull List<String> sweepExpiredMessages() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_messages_sweep_expired(app, b, e)), Json::asString);
    }

    /**
     * When {@link #sweepExpiredMessages} should run next.
     *
     * @return ms since the epoch, or null when no stored message disappears
     */
    public @Nullable Long nextMessageExpiry() {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_messages_next_expiry(app, out, e));
        return out.getValue() == 0 ? null : out.getValue();
    }

    // ---- Forward secrecy (the host loop does all of this by itself) -------------------------------

    /**
     * The prekey upload, when one is due.
     *
     * @param force upload even when the stock is fine
     * @return the request, or null
     */
    public @Nullable Request preparePrekeyUpload(boolean force) {
        Pointer app = handle();
        Object value = json((b, e) -> Ffi.LIB.coords_prekeys_prepare_upload(app, force ? 1 : 0, b, e));
        return value == null ? null : Request.fromJson(value);
    }

    /**
     * Records the relay's answer to the prekey upload.
     *
     * @param status the HTTP status
     * @param body the body
     * @return the stock the relay now holds, or null when it refused
     */
    public @Nullable Long processPrekeyUpload(int status, byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_prekeys_process_upload(app, status, data, Ffi.size(data.length), out, e));
        return out.getValue() < 0 ? null : out.getValue();
    }

    /**
     * The request asking the relay for our prekey stock.
     *
     * @return the request
     */
    public @NotNull Request preparePrekeyStock() {
        Pointer app = handle();
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_prekeys_prepare_stock(app, b, e)));
    }

    /**
     * Records the stock the relay reports.
     *
     * @param status the HTTP status
     * @param body the body
     * @return the stock, or null for any other answer
     */
    public @Nullable Long processPrekeyStock(int status, byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_prekeys_process_stock(app, status, data, Ffi.size(data.length), out, e));
        return out.getValue() < 0 ? null : out.getValue();
    }

    /**
     * Friends whose prekey bundle should be fetched now.
     *
     * @return their ids
     */
    public @NotNull List<String> bundlesDue() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_prekeys_bundles_due(app, b, e)), Json::asString);
    }

    /**
     * The request for a friend's prekey bundle.
     *
     * @param friendId the friend
     * @return the request
     */
    public @NotNull Request prepareBundleRequest(@NotNull String friendId) {
        Pointer app = handle();
        return Request.fromJson(json((b, e) -> Ffi.LIB.coords_prekeys_prepare_bundle(app, Ffi.cstr(friendId, "friendId"), b, e)));
    }

    /**
     * Checks and stores a friend's bundle answer.
     *
     * @param friendId the friend
     * @param status the HTTP status
     * @param body the body
     * @return {"result": "accepted", "one_time": …}, {"result": "not_offered"} or {"result": "refused", "error": …}
     */
    public @NotNull Map<String, Object> processBundle(@NotNull String friendId, int status, byte @NotNull [] body) {
        Pointer app = handle();
        byte[] data = body(body);
        return Json.asObject(json((b, e) -> Ffi.LIB.coords_prekeys_process_bundle(app, Ffi.cstr(friendId, "friendId"), status, data,
            Ffi.size(data.length), b, e)), "bundle");
    }

    /**
     * Erases replaced signed prekeys past their keep time, idle sessions and old skipped keys.
     *
     * @return how many went
     */
    public long sweepSessions() {
        Pointer app = handle();
        LongByReference out = new LongByReference();
        Ffi.call(e -> Ffi.LIB.coords_sessions_sweep(app, out, e));
        return out.getValue();
    }

    // ---- More of the groups ---------------------------------------------------------------------

    /**
     * Renames a group (admins only).
     *
     * @param group the group's id
     * @param name the new name
     * @return the group and the statements queued
     */
    public @NotNull GroupChange renameGroup(@NotNull String group, @NotNull String name) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_rename(app, Ffi.cstr(group, "group"), Ffi.cstr(name, "name"), b, e)));
    }

    /**
     * Makes a member an admin or not (admins only).
     *
     * @param group the group's id
     * @param member the member's id
     * @param isAdmin admin or not
     * @return the group and the statements queued
     */
    public @NotNull GroupChange setGroupAdmin(@NotNull String group, @NotNull String member, boolean isAdmin) {
        Pointer app = handle();
        return GroupChange.fromJson(json((b, e) -> Ffi.LIB.coords_groups_set_admin(app, Ffi.cstr(group, "group"), Ffi.cstr(member, "member"),
            isAdmin ? 1 : 0, b, e)));
    }

    /**
     * Deletes a group we left (its messages and keys).
     *
     * @param group the group's id
     * @throws CoordsException.ManagerException STILL_A_GROUP_MEMBER, GROUP_NOT_FOUND
     */
    public void deleteGroup(@NotNull String group) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_groups_delete(app, Ffi.cstr(group, "group"), e));
    }

    /**
     * Shares our position with a group's members or stops.
     *
     * @param group the group's id
     * @param sharing on or off
     * @return the reseal queued, or null
     */
    public @Nullable OutboxEntry setGroupSharing(@NotNull String group, boolean sharing) {
        Pointer app = handle();
        Object value = json((b, e) -> Ffi.LIB.coords_groups_set_sharing(app, Ffi.cstr(group, "group"), sharing ? 1 : 0, b, e));
        return value == null ? null : OutboxEntry.fromJson(value);
    }

    // ---- Live channel (PROTOCOL.md §8): this prepares and processes; the host owns the WebSockets --

    /**
     * The relays to hold a live WebSocket to.
     *
     * @return one per relay
     */
    public @NotNull List<LiveConnection> liveConnections() {
        Pointer app = handle();
        return list(json((b, e) -> Ffi.LIB.coords_live_connections(app, b, e)), LiveConnection::fromJson);
    }

    /**
     * The connection to {@code server} opened.
     *
     * @param server the relay
     * @return the frames to send, the catch-up fetches, the mailbox fetch
     */
    public @NotNull LiveOpened liveOpened(@NotNull String server) {
        Pointer app = handle();
        return LiveOpened.fromJson(json((b, e) -> Ffi.LIB.coords_live_opened(app, Ffi.cstr(server, "server"), b, e)));
    }

    /**
     * One text frame received from {@code server}.
     *
     * @param server the relay
     * @param frame the frame's UTF-8 bytes
     * @return what it meant
     * @throws CoordsException for a malformed frame (close with 4400 and reconnect)
     */
    public @NotNull LiveEvent liveProcess(@NotNull String server, byte @NotNull [] frame) {
        Pointer app = handle();
        byte[] data = Ffi.bytes(frame, "frame", -1);
        return LiveEvent.fromJson(json((b, e) -> Ffi.LIB.coords_live_process(app, Ffi.cstr(server, "server"), data, Ffi.size(data.length), b, e)));
    }

    /**
     * The mailbox fetch a live notice asked for is done; another may be owed.
     *
     * @param server the relay
     * @return the next mailbox fetch, or null
     */
    public @Nullable Request liveMailboxFetched(@NotNull String server) {
        Pointer app = handle();
        Object value = json((b, e) -> Ffi.LIB.coords_live_mailbox_fetched(app, Ffi.cstr(server, "server"), b, e));
        return value == null ? null : Request.fromJson(value);
    }

    /**
     * The connection to {@code server} closed or could not be opened.
     *
     * @param server the relay
     * @param closeCode the close code the relay sent, or null
     * @param upgradeStatus the upgrade's HTTP status when it failed, or null
     * @return the milliseconds to wait before reconnecting, or null when the relay has no live channel (poll it)
     */
    public @Nullable Long liveClosed(@NotNull String server, @Nullable Integer closeCode, @Nullable Integer upgradeStatus) {
        Pointer app = handle();
        int code = closeCode == null ? 0 : closeCode;
        int upgrade = upgradeStatus == null ? 0 : upgradeStatus;
        Map<String, Object> next = Json.asObject(json((b, e) -> Ffi.LIB.coords_live_closed(app, Ffi.cstr(server, "server"), code, upgrade, b, e)), "live");
        return "reconnect".equals(next.get("action")) ? Json.longValue(next, "after_ms") : null;
    }

    /**
     * The host closed its connection to {@code server} itself (the app went to the background,
     * the user stopped watching); for a close it did not ask for, call {@link #liveClosed}. While a
     * connection is confirmed, {@link #due} leaves the friends watched there and the mailbox out of
     * its periodic fetches; after this they are fetched again, so ask {@link #nextWake} again. A
     * relay without a connection is ignored.
     *
     * @param server the relay
     * @throws CoordsException on a closed app
     */
    public void liveStopped(@NotNull String server) {
        Pointer app = handle();
        Ffi.call(e -> Ffi.LIB.coords_live_stopped(app, Ffi.cstr(server, "server"), e));
    }
}
