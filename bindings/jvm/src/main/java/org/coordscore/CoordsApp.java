package org.coordscore;

import com.sun.jna.CallbackThreadInitializer;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.Closeable;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
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

    /**
     * The raw JSON of a text the caller built (for debugging and tests).
     *
     * @param utf8 bytes
     * @return the text
     */
    static String text(byte[] utf8) {
        return new String(utf8, StandardCharsets.UTF_8);
    }
}
