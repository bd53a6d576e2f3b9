package org.coordscore;

import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * The stateless functions of libcoordscore: identities, signatures, location blobs, friend
 * links, QR codes, envelopes and offline places. The same surface as the Python package's
 * module functions. Every method is safe from any thread, copies what it returns and throws a
 * {@link CoordsException} subclass carrying the library's stable code; nothing is checked.
 *
 * <p>The library is found through {@code -Dcoordscore.library=PATH}, then
 * {@code $COORDSCORE_LIB}, then as "coordscore" on JNA's search path ({@code jna.library.path});
 * a library of another ABI version fails the first call with {@link ErrorCode#ABI_MISMATCH}.
 */
public final class Coords {
    private Coords() {}

    /** The CoordsCore release this binding belongs to. */
    public static final String VERSION = "1.0.0";

    /**
     * The loaded library's version (equal to {@link #VERSION} for a matching build).
     *
     * @return e.g. "1.0.0"
     */
    public static @NotNull String version() {
        return Ffi.utf8(Ffi.LIB.coords_version());
    }

    /**
     * base64url without padding (how Coords writes ids).
     *
     * @param data bytes
     * @return the text
     */
    public static @NotNull String b64url(byte @NotNull [] data) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(data);
    }

    /**
     * A new identity.
     *
     * @return the seed and public key
     * @throws CoordsException.CryptoException CRYPTO_INIT when libsodium cannot start
     */
    public static @NotNull Identity generateIdentity() {
        byte[] seed = new byte[32];
        byte[] key = new byte[32];
        Ffi.call(e -> Ffi.LIB.coords_identity_generate(seed, key, e));
        return new Identity(seed, key);
    }

    /**
     * The public key of a seed.
     *
     * @param seed 32 bytes
     * @return the 32-byte Ed25519 public key
     * @throws CoordsException.ArgumentException INVALID_LENGTH, NULL_ARGUMENT
     */
    public static byte @NotNull [] publicFromSeed(byte @NotNull [] seed) {
        byte[] key = new byte[32];
        Ffi.call(e -> Ffi.LIB.coords_identity_public_from_seed(Ffi.bytes(seed, "seed", 32), key, e));
        return key;
    }

    /**
     * The Ed25519 signature of {@code message} by {@code seed}'s identity.
     *
     * @param seed 32 bytes
     * @param message at most 16 MiB
     * @return 64 bytes
     * @throws CoordsException.ArgumentException INVALID_LENGTH, NULL_ARGUMENT, TOO_LARGE
     */
    public static byte @NotNull [] sign(byte @NotNull [] seed, byte @NotNull [] message) {
        byte[] signature = new byte[64];
        byte[] m = Ffi.bytes(message, "message", -1);
        Ffi.call(e -> Ffi.LIB.coords_sign(Ffi.bytes(seed, "seed", 32), m, Ffi.size(m.length), signature, e));
        return signature;
    }

    /**
     * Whether {@code signature} is {@code publicKey}'s signature of {@code message} (false, never
     * an exception, for a bad or malformed one).
     *
     * @param publicKey 32 bytes
     * @param message the signed bytes
     * @param signature 64 bytes
     * @return whether it verifies
     * @throws CoordsException.ArgumentException INVALID_LENGTH, NULL_ARGUMENT, TOO_LARGE
     */
    public static boolean verify(byte @NotNull [] publicKey, byte @NotNull [] message, byte @NotNull [] signature) {
        byte[] m = Ffi.bytes(message, "message", -1);
        try {
            Ffi.call(e -> Ffi.LIB.coords_verify(Ffi.bytes(publicKey, "publicKey", 32), m, Ffi.size(m.length),
                Ffi.bytes(signature, "signature", 64), e));
            return true;
        } catch (CoordsException.CryptoException error) {
            if (error.code() == ErrorCode.AUTHENTICATION_FAILED) return false;
            throw error;
        }
    }

    /**
     * Seals {@code location} into a Coords v3 blob for 32-byte public keys, the sender's own first.
     *
     * @param location the fix
     * @param recipients 1 to 1050 keys of 32 bytes
     * @return the blob
     * @throws CoordsException.WireException INVALID_LOCATION, NO_RECIPIENTS, TOO_MANY_RECIPIENTS, INVALID_RECIPIENT_KEY
     * @throws CoordsException.ArgumentException INVALID_LENGTH for a key of another length
     */
    public static byte @NotNull [] seal(@NotNull Location location, @NotNull List<byte[]> recipients) {
        byte[] keys = new byte[recipients.size() * 32];
        for (int i = 0; i < recipients.size(); i++) {
            System.arraycopy(Ffi.bytes(recipients.get(i), "recipients[" + i + "]", 32), 0, keys, i * 32, 32);
        }
        Structs.Location c = location.toC();
        return Ffi.buffer((b, e) -> Ffi.LIB.coords_blob_seal(c, keys.length == 0 ? null : keys, Ffi.size(recipients.size()), b, e));
    }

    /**
     * Opens a location blob as {@code seed}'s identity.
     *
     * @param seed 32 bytes
     * @param blob at most 64 KiB
     * @return the fix
     * @throws CoordsException.WireException NOT_A_RECIPIENT, BLOB_TAMPERED, BLOB_TRUNCATED, … when it is not for us or was changed
     */
    public static @NotNull Location openBlob(byte @NotNull [] seed, byte @NotNull [] blob) {
        Structs.Location out = new Structs.Location();
        byte[] b = Ffi.bytes(blob, "blob", -1);
        Ffi.call(e -> Ffi.LIB.coords_blob_open(Ffi.bytes(seed, "seed", 32), b, Ffi.size(b.length), out, e));
        return Location.fromC(out);
    }

    /**
     * The id of a public key (base64url, 43 characters), as friend records and links name it.
     *
     * @param publicKey 32 bytes
     * @return the id
     * @throws CoordsException.CryptoException INVALID_PUBLIC_KEY for bytes that are not a key
     */
    public static @NotNull String publicKeyB64url(byte @NotNull [] publicKey) {
        return Ffi.text((b, e) -> Ffi.LIB.coords_public_key_b64url(Ffi.bytes(publicKey, "publicKey", 32), b, e));
    }

    /**
     * The endpoint that wakes this device through a push gateway (PROTOCOL.md §8.8), to register
     * with {@link CoordsApp#preparePushRegister}: the gateway's URL, "/up/" and the device token
     * sealed to the gateway's X25519 key. A fresh sealed box each call; the relay never sees the
     * device token.
     *
     * @param gatewayUrl the gateway's https URL
     * @param gatewayKey the gateway's X25519 public key, base64url
     * @param platform "apns" or "fcm"
     * @param device the APNs token in lowercase hexadecimal, or the FCM registration token
     * @param environment APNs: "production", "development" or null (production); FCM: null
     * @return the endpoint URL
     * @throws CoordsException.WireException INVALID_PUSH_TOKEN (a device token or URL §8.8 does not allow)
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT (platform, environment or key)
     */
    public static @NotNull String pushGatewayEndpoint(@NotNull String gatewayUrl, @NotNull String gatewayKey, @NotNull String platform,
        @NotNull String device, @Nullable String environment) {
        byte[] env = environment == null ? null : Ffi.cstr(environment, "environment");
        return Ffi.text((b, e) -> Ffi.LIB.coords_push_gateway_endpoint(Ffi.cstr(gatewayUrl, "gatewayUrl"), Ffi.cstr(gatewayKey, "gatewayKey"),
            Ffi.cstr(platform, "platform"), Ffi.cstr(device, "device"), env, b, e));
    }

    /**
     * The {@code coord://} link for a public key, relay and display name.
     *
     * @param publicKey 32 bytes
     * @param server the relay's https URL
     * @param name the display name
     * @return the link
     * @throws CoordsException.WireException INVALID_SERVER_URL
     */
    public static @NotNull String friendLink(byte @NotNull [] publicKey, @NotNull String server, @NotNull String name) {
        return Ffi.text((b, e) -> Ffi.LIB.coords_friend_link_generate(Ffi.bytes(publicKey, "publicKey", 32), Ffi.cstr(server, "server"),
            Ffi.cstr(name, "name"), b, e));
    }

    /**
     * Parses a {@code coord://} link.
     *
     * @param link the link
     * @return its key id, relay and name
     * @throws CoordsException.WireException INVALID_FRIEND_LINK naming what is wrong
     */
    public static @NotNull FriendLink parseFriendLink(@NotNull String link) {
        return FriendLink.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_friend_link_parse(Ffi.cstr(link, "link"), b, e)));
    }

    /**
     * The safety number two people compare in person: 30 digits in six groups of five (the same
     * from both sides).
     *
     * @param a one public key (32 bytes)
     * @param b the other
     * @return the digits
     * @throws CoordsException.ArgumentException INVALID_LENGTH
     */
    public static @NotNull String safetyNumber(byte @NotNull [] a, byte @NotNull [] b) {
        return Ffi.text((buffer, e) -> Ffi.LIB.coords_safety_number(Ffi.bytes(a, "a", 32), Ffi.bytes(b, "b", 32), buffer, e));
    }

    /**
     * The QR code for {@code text} (at most 213 UTF-8 bytes): rows of modules from the top, true
     * for dark. Draw it with a quiet zone of 4 light modules.
     *
     * @param text e.g. a friend link
     * @return the modules, row by row
     * @throws CoordsException.WireException QR_UNENCODABLE for text too long
     */
    public static @NotNull List<List<Boolean>> qrCode(@NotNull String text) {
        IntByReference size = new IntByReference();
        byte[] modules = Ffi.buffer((b, e) -> Ffi.LIB.coords_qr_encode(Ffi.cstr(text, "text"), b, size, e));
        int n = size.getValue();
        List<List<Boolean>> rows = new ArrayList<>();
        for (int y = 0; y < n; y++) {
            List<Boolean> row = new ArrayList<>();
            for (int x = 0; x < n && y * n + x < modules.length; x++) row.add(modules[y * n + x] == 1);
            rows.add(row);
        }
        return rows;
    }

    /**
     * The QR code for {@code text} as an SVG document, quiet zone included.
     *
     * @param text e.g. a friend link
     * @param modulePixels 1..64 pixels per module
     * @return the SVG
     * @throws CoordsException.WireException QR_UNENCODABLE
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT for a module size out of range
     */
    public static @NotNull String qrSvg(@NotNull String text, int modulePixels) {
        return Ffi.text((b, e) -> Ffi.LIB.coords_qr_svg(Ffi.cstr(text, "text"), modulePixels, b, e));
    }

    /**
     * Whether the cached {@code fix} may be uploaded again at {@code nowMs} for {@code reason}
     * ("launch", "background" or "explicit").
     *
     * @param fix the cached fix
     * @param nowMs the time now, ms since the epoch
     * @param reason why the upload happens
     * @return whether to reuse it
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT for an unknown reason
     * @throws CoordsException.WireException INVALID_LOCATION
     */
    public static boolean mayReuseLocation(@NotNull Location fix, long nowMs, @NotNull String reason) {
        ByteByReference out = new ByteByReference();
        Structs.Location c = fix.toC();
        Ffi.call(e -> Ffi.LIB.coords_may_reuse_location(c, nowMs, Ffi.cstr(reason, "reason"), out, e));
        return out.getValue() != 0;
    }

    /**
     * Seals a payload (UTF-8 JSON bytes) from {@code seed}'s identity to {@code recipient}.
     *
     * @param seed 32 bytes
     * @param recipient the recipient's 32-byte public key
     * @param payload the payload's JSON bytes
     * @param createdAt Unix seconds
     * @param ttlSeconds how long the envelope lives (86400 is the usual)
     * @return the envelope as a JSON object
     * @throws CoordsException.WireException INVALID_ENVELOPE
     */
    public static @NotNull Map<String, Object> sealEnvelope(byte @NotNull [] seed, byte @NotNull [] recipient, byte @NotNull [] payload,
        long createdAt, long ttlSeconds) {
        byte[] p = Ffi.bytes(payload, "payload", -1);
        return Json.asObject(Ffi.json((b, e) -> Ffi.LIB.coords_envelope_seal(Ffi.bytes(seed, "seed", 32), Ffi.bytes(recipient, "recipient", 32),
            p, Ffi.size(p.length), createdAt, ttlSeconds, b, e)), "envelope");
    }

    /**
     * Verifies and opens an envelope from {@code sender} to {@code seed}'s identity.
     *
     * @param seed 32 bytes
     * @param sender the sender's 32-byte public key
     * @param envelope the envelope's JSON object
     * @param now Unix seconds
     * @return the payload's bytes
     * @throws CoordsException.WireException ENVELOPE_SIGNATURE, ENVELOPE_TAMPERED, ENVELOPE_EXPIRED, ENVELOPE_NOT_FOR_ME, …
     */
    public static byte @NotNull [] openEnvelope(byte @NotNull [] seed, byte @NotNull [] sender, @NotNull Map<String, Object> envelope, long now) {
        return Ffi.buffer((b, e) -> Ffi.LIB.coords_envelope_open(Ffi.bytes(seed, "seed", 32), Ffi.bytes(sender, "sender", 32),
            Ffi.cstr(Json.write(envelope), "envelope"), now, b, e));
    }

    /**
     * The nearest named place from the bundled data, offline (no coordinate leaves the process).
     *
     * @param latitude degrees
     * @param longitude degrees
     * @param accuracyMeters metres (0 when unknown)
     * @return the place
     * @throws CoordsException.GeocodingException INVALID_COORDINATE for positions not on Earth
     */
    public static @NotNull Place nearestPlace(double latitude, double longitude, double accuracyMeters) {
        return Place.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_geocode_nearest(latitude, longitude, accuracyMeters, b, e)));
    }

    /**
     * A signed upload request for {@code server} without any stored state, sealed for the
     * identity of {@code seed} and {@code friendIds}.
     *
     * @param seed 32 bytes
     * @param location the fix
     * @param friendIds base64url ids
     * @param server the relay's URL
     * @return the request
     * @throws CoordsException.WireException INVALID_LOCATION, INVALID_PUBLIC_KEY_ID, INVALID_SERVER_URL
     */
    public static @NotNull Request prepareUpload(byte @NotNull [] seed, @NotNull Location location, @NotNull List<String> friendIds,
        @NotNull String server) {
        Structs.Location c = location.toC();
        return Request.fromJson(Ffi.json((b, e) -> Ffi.LIB.coords_prepare_upload(Ffi.bytes(seed, "seed", 32), c,
            Ffi.cstr(Json.write(friendIds), "friendIds"), Ffi.cstr(server, "server"), b, e)));
    }

    /**
     * Fetch requests for friends ({"pubkey", "server"} objects), grouped by relay, at most 50 ids each.
     *
     * @param friends the friends
     * @return the requests
     * @throws CoordsException.WireException INVALID_PUBLIC_KEY_ID, INVALID_SERVER_URL
     */
    public static @NotNull List<Request> prepareFetch(@NotNull List<Map<String, Object>> friends) {
        Object value = Ffi.json((b, e) -> Ffi.LIB.coords_prepare_fetch(Ffi.cstr(Json.write(friends), "friends"), b, e));
        List<Request> out = new ArrayList<>();
        for (Object item : (List<?>) value) out.add(Request.fromJson(item));
        return out;
    }

    /**
     * Verifies and opens every entry of a fetch response: one result per id, in order.
     *
     * @param seed the reader's 32-byte seed
     * @param body the relay's answer
     * @return the results
     * @throws CoordsException.WireException INVALID_JSON, UNEXPECTED_JSON
     */
    public static @NotNull List<FetchResult> processFetchResponse(byte @NotNull [] seed, byte @NotNull [] body) {
        byte[] data = Ffi.bytes(body, "body", -1);
        Object value = Ffi.json((b, e) -> Ffi.LIB.coords_process_fetch_response(Ffi.bytes(seed, "seed", 32), data, Ffi.size(data.length), b, e));
        List<FetchResult> out = new ArrayList<>();
        for (Object item : (List<?>) value) out.add(FetchResult.fromJson(item));
        return out;
    }

    /**
     * The age rule of {@link #mayReuseLocation} alone (it cannot check the accuracy: prefer that).
     *
     * @param fixTimestampMs when the fix was taken
     * @param nowMs the time now
     * @param reason "launch", "background" or "explicit"
     * @return whether to reuse it
     * @throws CoordsException.ArgumentException INVALID_ARGUMENT for an unknown reason
     */
    public static boolean mayReuseFix(long fixTimestampMs, long nowMs, @NotNull String reason) {
        ByteByReference out = new ByteByReference();
        Ffi.call(e -> Ffi.LIB.coords_may_reuse_fix(fixTimestampMs, nowMs, Ffi.cstr(reason, "reason"), out, e));
        return out.getValue() != 0;
    }

    /**
     * The ABI version of the loaded library (this binding checks it on load).
     *
     * @return COORDS_ABI_VERSION of the library
     */
    public static int abiVersion() {
        return Ffi.LIB.coords_abi_version();
    }
}
