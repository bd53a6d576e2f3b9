package org.coordscore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The stateless functions against the independent implementations' vectors, errors and hostile input. */
class CoordsTest {
    static Map<String, Object> vectors;

    @BeforeAll
    static void load() throws IOException {
        Path file = Path.of(System.getProperty("coordscore.root", "."), "Tests", "CoordsCoreTests", "Vectors", "coords-v3.json");
        vectors = Json.asObject(Json.parse(Files.readAllBytes(file)), "vectors");
    }

    static byte[] hex(Object text) {
        return HexFormat.of().parseHex((String) text);
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(String key) {
        return (List<Map<String, Object>>) vectors.get(key);
    }

    @Test
    void theLibraryIsTheOneThisBindingWasGeneratedFor() {
        assertEquals(Coords.VERSION, Coords.version());
        assertEquals(Ffi.ABI_VERSION, Ffi.LIB.coords_abi_version());
        assertEquals("NOT_A_RECIPIENT", ErrorCode.name(ErrorCode.NOT_A_RECIPIENT));
        assertNull(ErrorCode.name(99_999));
    }

    @Test
    void vectorBlobsOpenForEveryRecipientAndNoOneElse() {
        List<Map<String, Object>> keys = list("keys");
        for (Map<String, Object> blob : list("blobs")) {
            byte[] data = hex(blob.get("blob_hex"));
            byte[] wire = hex(blob.get("location_wire_hex"));
            long timestamp = 0;
            for (int i = 12; i < wire.length; i++) timestamp = timestamp << 8 | (wire[i] & 0xff);
            for (Object index : (List<?>) blob.get("recipients")) {
                Location location = Coords.openBlob(hex(keys.get(((Long) index).intValue()).get("seed")), data);
                assertEquals(timestamp, location.getTimestampMs());
            }
            for (Object index : (List<?>) blob.get("not_readable_by")) {
                CoordsException error = assertThrows(CoordsException.class,
                    () -> Coords.openBlob(hex(keys.get(((Long) index).intValue()).get("seed")), data));
                assertEquals(ErrorCode.NOT_A_RECIPIENT, error.code());
                assertInstanceOf(CoordsException.WireException.class, error);
            }
        }
    }

    @Test
    void vectorRejectsAreWireErrors() {
        byte[] seed = hex(list("keys").get(0).get("seed"));
        for (Map<String, Object> reject : list("blob_rejects")) {
            CoordsException error = assertThrows(CoordsException.class, () -> Coords.openBlob(seed, hex(reject.get("blob_hex"))));
            assertTrue(error.code() >= 300 && error.code() < 400, (String) reject.get("why"));
        }
    }

    @Test
    void vectorKeysLinksAndSignatures() {
        List<Map<String, Object>> keys = list("keys");
        for (Map<String, Object> key : keys.subList(0, 10)) {
            assertArrayEquals(hex(key.get("ed25519_public")), Coords.publicFromSeed(hex(key.get("seed"))));
        }
        for (Map<String, Object> link : list("links")) {
            byte[] key = Base64.getUrlDecoder().decode((String) link.get("pubkey_b64url"));
            assertEquals(link.get("link"), Coords.friendLink(key, (String) link.get("server"), (String) link.get("name")));
        }
        for (Map<String, Object> parse : list("link_parse")) {
            if ((Boolean) parse.get("ok")) {
                FriendLink parsed = Coords.parseFriendLink((String) parse.get("link"));
                assertEquals(new FriendLink((String) parse.get("pubkey"), (String) parse.get("server"), (String) parse.get("name")), parsed);
            } else {
                CoordsException error = assertThrows(CoordsException.class, () -> Coords.parseFriendLink((String) parse.get("link")));
                assertTrue(error.code() == ErrorCode.INVALID_FRIEND_LINK || error.code() == ErrorCode.INVALID_UTF8, (String) parse.get("why"));
            }
        }
        for (Map<String, Object> upload : list("uploads")) {
            byte[] seed = hex(keys.get(((Long) upload.get("seed_index")).intValue()).get("seed"));
            byte[] signature = Coords.sign(seed, hex(upload.get("signed_message_hex")));
            assertEquals(((Map<?, ?>) upload.get("body")).get("signature"), Coords.b64url(signature));
        }
    }

    @Test
    void identitiesSignVerifyAndSealRoundTrips() {
        Identity alice = Coords.generateIdentity();
        Identity bob = Coords.generateIdentity();
        Identity eve = Coords.generateIdentity();
        assertArrayEquals(alice.getPublicKey(), Coords.publicFromSeed(alice.getSeed()));
        byte[] message = "meet at the station".getBytes(StandardCharsets.UTF_8);
        byte[] signature = Coords.sign(alice.getSeed(), message);
        assertTrue(Coords.verify(alice.getPublicKey(), message, signature));
        signature[0] ^= 1;
        assertFalse(Coords.verify(alice.getPublicKey(), message, signature));
        assertFalse(Coords.verify(bob.getPublicKey(), message, Coords.sign(alice.getSeed(), message)));

        Location fix = new Location(47.3769, 8.5417, 408, 5, 1_763_805_600_000L);
        byte[] blob = Coords.seal(fix, List.of(alice.getPublicKey(), bob.getPublicKey()));
        assertEquals(fix.getLatitude(), Coords.openBlob(bob.getSeed(), blob).getLatitude(), 1e-6);
        assertEquals(fix.getTimestampMs(), Coords.openBlob(alice.getSeed(), blob).getTimestampMs());
        assertEquals(ErrorCode.NOT_A_RECIPIENT, assertThrows(CoordsException.class, () -> Coords.openBlob(eve.getSeed(), blob)).code());
        blob[blob.length - 1] ^= 1;
        assertInstanceOf(CoordsException.WireException.class, assertThrows(CoordsException.class, () -> Coords.openBlob(bob.getSeed(), blob)));
        assertTrue(alice.toString().contains("hidden") && !alice.toString().contains(HexFormat.of().formatHex(alice.getSeed())));
    }

    @Test
    void envelopesOpenOnlyForTheirRecipient() {
        Identity alice = Coords.generateIdentity();
        Identity bob = Coords.generateIdentity();
        long now = System.currentTimeMillis() / 1000;
        byte[] payload = "{\"kind\":\"text\",\"text\":\"hi\"}".getBytes(StandardCharsets.UTF_8);
        Map<String, Object> envelope = Coords.sealEnvelope(alice.getSeed(), bob.getPublicKey(), payload, now, 86_400);
        assertArrayEquals(payload, Coords.openEnvelope(bob.getSeed(), alice.getPublicKey(), envelope, now));
        CoordsException wrong = assertThrows(CoordsException.class, () -> Coords.openEnvelope(alice.getSeed(), alice.getPublicKey(), envelope, now));
        assertTrue(wrong.code() >= 360 && wrong.code() < 370, wrong.getMessage());
    }

    @Test
    void linksQrCodesSafetyNumbersAndPlaces() {
        Identity alice = Coords.generateIdentity();
        Identity bob = Coords.generateIdentity();
        String link = Coords.friendLink(alice.getPublicKey(), "https://relay.example", "Alice");
        FriendLink parsed = Coords.parseFriendLink(link);
        assertEquals(Coords.publicKeyB64url(alice.getPublicKey()), parsed.getPubkey());
        assertEquals("Alice", parsed.getName());
        List<List<Boolean>> qr = Coords.qrCode(link);
        assertEquals(qr.size(), qr.get(0).size());
        assertTrue(Coords.qrSvg(link, 4).startsWith("<svg") || Coords.qrSvg(link, 4).startsWith("<?xml"));
        String number = Coords.safetyNumber(alice.getPublicKey(), bob.getPublicKey());
        assertEquals(number, Coords.safetyNumber(bob.getPublicKey(), alice.getPublicKey()));
        assertEquals(35, number.length());
        Place zurich = Coords.nearestPlace(47.3769, 8.5417, 10);
        assertEquals("CH", zurich.getCountryCode());
        assertEquals(ErrorCode.INVALID_COORDINATE, assertThrows(CoordsException.GeocodingException.class, () -> Coords.nearestPlace(91, 0, 0)).code());
        assertTrue(Coords.mayReuseLocation(new Location(1, 2, 0, 10, System.currentTimeMillis()), System.currentTimeMillis(), "launch"));
    }

    @Test
    void hostileArgumentsFailWithTheirCodeAndNeverCrash() {
        assertEquals(ErrorCode.INVALID_LENGTH, assertThrows(CoordsException.ArgumentException.class, () -> Coords.publicFromSeed(new byte[31])).code());
        assertEquals(ErrorCode.NULL_ARGUMENT, assertThrows(CoordsException.ArgumentException.class, () -> Coords.sign(null, new byte[1])).code());
        assertEquals(ErrorCode.INVALID_ARGUMENT,
            assertThrows(CoordsException.ArgumentException.class, () -> Coords.parseFriendLink("coord://a\0b")).code());
        assertEquals(ErrorCode.NO_RECIPIENTS, assertThrows(CoordsException.class, () -> Coords.seal(new Location(1, 2, 3), List.of())).code());
        assertEquals(ErrorCode.INVALID_LOCATION,
            assertThrows(CoordsException.class, () -> Coords.seal(new Location(Double.NaN, 2, 3), List.of(new byte[32]))).code());
        assertEquals(ErrorCode.INVALID_LOCATION,
            assertThrows(CoordsException.class, () -> Coords.seal(new Location(91, 2, 3), List.of(Coords.generateIdentity().getPublicKey()))).code());
        assertInstanceOf(CoordsException.WireException.class,
            assertThrows(CoordsException.class, () -> Coords.openBlob(new byte[32], new byte[0])));
        assertEquals(ErrorCode.TOO_LARGE, assertThrows(CoordsException.ArgumentException.class,
            () -> Coords.openBlob(new byte[32], new byte[70_000])).code());
        assertInstanceOf(CoordsException.CryptoException.class,
            assertThrows(CoordsException.class, () -> Coords.publicKeyB64url(new byte[32])));
        assertThrows(CoordsException.WireException.class, () -> Coords.qrCode("x".repeat(5_000)));
        assertThrows(CoordsException.ArgumentException.class, () -> Coords.mayReuseLocation(new Location(1, 2, 3), 4, "sometimes"));
    }

    @Test
    void jsonIsStrictAndRoundTrips() {
        Object value = Json.parse("{\"a\":[1,-2,3.5,true,false,null,\"\\u00e9\\n\"],\"b\":{},\"big\":18446744073709551615}");
        Map<String, Object> o = Json.asObject(value, "test");
        assertEquals(List.of(1L, -2L, 3.5, true, false), ((List<?>) o.get("a")).subList(0, 5));
        assertEquals("18446744073709551615", Long.toUnsignedString((Long) o.get("big")));
        assertEquals(value, Json.parse(Json.write(value)));
        for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "tru", "[1] 2", "\"a\u0001\"", "[".repeat(10_000)}) {
            assertEquals(ErrorCode.INVALID_JSON, assertThrows(CoordsException.WireException.class, () -> Json.parse(bad), bad).code());
        }
        assertThrows(CoordsException.WireException.class, () -> Friend.fromJson(Json.parse("{\"id\":1}")));
        assertThrows(CoordsException.WireException.class, () -> Friend.fromJson(null));
    }
}
