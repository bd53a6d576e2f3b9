package org.coordscore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Place files and the calls an app makes less often, without a relay. */
class MoreTest {
    static final Path PLACES = Path.of(System.getProperty("coordscore.root", "."), "Sources", "CGeoData", "places15000.cgeo");

    @TempDir
    Path dir;

    @Test
    void placeFilesLoadAnswerAndRefuseDamage() throws Exception {
        Places places = new Places(PLACES.toString());
        try (places) {
            assertTrue(places.count() > 30_000);
            assertEquals("Lisbon, Portugal", places.nearest(38.7223, -9.1393, 0).getDisplay());
            assertEquals(Coords.nearestPlace(-33.87, 151.21, 0), places.nearest(-33.87, 151.21, 0));
        }
        assertEquals(ErrorCode.INVALID_HANDLE, assertThrows(CoordsException.ArgumentException.class, () -> places.nearest(0, 0, 0)).code());
        assertEquals(ErrorCode.UNREADABLE_PLACE_FILE,
            assertThrows(CoordsException.GeocodingException.class, () -> new Places(dir.resolve("missing.cgeo").toString())).code());
        byte[] data = Files.readAllBytes(PLACES);
        data[data.length / 2] ^= 1;
        Path damaged = dir.resolve("damaged.cgeo");
        Files.write(damaged, data);
        assertEquals(ErrorCode.DAMAGED_PLACE_DATA, assertThrows(CoordsException.GeocodingException.class, () -> new Places(damaged.toString())).code());
    }

    @Test
    void pushGatewayEndpointsSealTheDeviceToTheGateway() {
        byte[] raw = new byte[32];
        for (int i = 0; i < raw.length; i++) raw[i] = (byte) (i + 1);
        String key = Coords.b64url(raw);  // any 32 bytes are an X25519 public key
        String device = "ab".repeat(32);
        String apns = Coords.pushGatewayEndpoint("https://push.example.com", key, "apns", device, "development");
        String fcm = Coords.pushGatewayEndpoint("https://push.example.com/", key, "fcm", "abc:DEF-1_2", null);
        for (String endpoint : List.of(apns, fcm)) {
            assertTrue(endpoint.startsWith("https://push.example.com/up/"));
            assertEquals(28 + 747, endpoint.length());
        }
        assertFalse(apns.contains(device));
        CoordsException bad = assertThrows(CoordsException.class, () -> Coords.pushGatewayEndpoint("https://push.example.com", key, "apns", "AB".repeat(32), null));
        assertEquals(ErrorCode.INVALID_PUSH_TOKEN, bad.code());
        assertThrows(CoordsException.ArgumentException.class, () -> Coords.pushGatewayEndpoint("https://push.example.com", key, "wns", "x", null));
        assertThrows(CoordsException.ArgumentException.class, () -> Coords.pushGatewayEndpoint("https://push.example.com", "short", "fcm", "x", null));
    }

    @Test
    void statelessUploadsFetchesAndReuse() {
        Identity alice = Coords.generateIdentity();
        Identity bob = Coords.generateIdentity();
        String bobId = Coords.publicKeyB64url(bob.getPublicKey());
        long now = System.currentTimeMillis();
        Request upload = Coords.prepareUpload(alice.getSeed(), new Location(1, 2, now), List.of(bobId), "https://relay.example");
        assertEquals("PUT", upload.getMethod());
        assertTrue(upload.getUrl().startsWith("https://relay.example/"));
        List<Request> fetches = Coords.prepareFetch(List.of(Map.of("pubkey", bobId, "server", "https://relay.example")));
        assertEquals(List.of(bobId), fetches.get(0).getIds());
        assertThrows(CoordsException.WireException.class, () -> Coords.processFetchResponse(bob.getSeed(), "not json".getBytes()));
        assertTrue(Coords.mayReuseFix(now - 1_000, now, "launch"));
        assertFalse(Coords.mayReuseFix(now - 3_600_000, now, "launch"));
        assertEquals(Ffi.ABI_VERSION, Coords.abiVersion());
    }

    @Test
    void settingsRotationOutboxAndPrekeysWithoutARelay() {
        try (CoordsApp app = CoordsApp.open(dir.resolve("a").toString(), "p", AppTest.FAST)) {
            String first = app.createIdentity("A", AppTest.RELAY);
            Friend friend = app.addFriend(Coords.publicKeyB64url(Coords.generateIdentity().getPublicKey()), AppTest.RELAY, "F", true, true);
            app.mute(friend.getId(), null);
            assertEquals(-1L, app.mutedUntil(friend.getId()));  // UINT64_MAX: until unmuted
            app.unmute(friend.getId());
            assertNull(app.mutedUntil(friend.getId()));
            assertThrows(CoordsException.ManagerException.class, () -> app.mute("nobody", null));
            app.setQuietHours("22:00-07:00", 60);
            assertThrows(CoordsException.ManagerException.class, () -> app.setQuietHours("25:00-07:00", 0));
            assertThrows(CoordsException.ManagerException.class, () -> app.setQuietHours("22:00-07:00", 900));
            app.setDeliveryReceipts(false);
            assertNotNull(app.notificationPolicy());
            app.setDisappearing(friend.getId(), 3_600L);
            assertEquals(List.of(), app.sweepExpiredMessages());
            assertNull(app.nextMessageExpiry());
            assertTrue(app.sweepSessions() >= 0);

            Request request = app.prepareDelete();
            long id = app.enqueue("request", request, null);
            assertTrue(app.outbox(false).stream().anyMatch(e -> e.getId() == id));
            assertThrows(CoordsException.ArgumentException.class, () -> app.enqueue("nonsense", request, null));
            app.removeQueued(id);
            assertFalse(app.outbox(false).stream().anyMatch(e -> e.getId() == id));
            assertNotNull(app.preparePrekeyStock());
            assertNotNull(app.preparePrekeyUpload(true));
            assertNotNull(app.prepareMessageFetch());
            assertNotNull(app.preparePushRegister("https://push.example/up/abc", null));
            assertThrows(CoordsException.class, () -> app.preparePushRegister("ftp://push.example", null));
            assertFalse(app.liveConnections().isEmpty());
            // A confirmed live connection: the loop leaves what it watches to it until stopped.
            app.liveOpened(AppTest.RELAY);
            LiveEvent confirmed = app.liveProcess(AppTest.RELAY, "{\"type\":\"subscribed\",\"ids\":1,\"mailbox\":true}".getBytes(StandardCharsets.UTF_8));
            assertEquals("subscribed", confirmed.getType());
            long later = System.currentTimeMillis() + 3_600_000L;
            assertTrue(app.due(later).stream().noneMatch(r -> r.getPurpose().equals("fetch") || r.getPurpose().equals("mailbox")));
            app.liveStopped(AppTest.RELAY);
            List<HostRequest> after = app.due(later + 61_000L);
            assertTrue(after.stream().anyMatch(r -> r.getPurpose().equals("fetch")));
            assertTrue(after.stream().anyMatch(r -> r.getPurpose().equals("mailbox")));
            app.liveStopped("https://nowhere.example");  // no connection there: nothing to do

            Rotation rotation = app.rotate(null, false);
            assertFalse(rotation.getId().equals(first));
            assertEquals(List.of(first), app.previousIdentities());
            assertEquals(rotation.getId(), app.info().getId());
            app.rekey();
            assertEquals(rotation.getId(), app.info().getId());
        }
    }
}
