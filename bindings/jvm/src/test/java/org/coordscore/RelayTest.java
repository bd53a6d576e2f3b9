package org.coordscore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Library;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against a live coords-relay ($COORDS_RELAY_URL; tests/e2e/test_jvm.py starts one): a share, a
 * fetch, messages and a group session, every request carried by {@link HostLoop} alone.
 */
class RelayTest {
    static String relay;

    @TempDir
    Path dir;

    @BeforeAll
    static void relay() {
        relay = System.getenv("COORDS_RELAY_URL");
        assertNotNull(relay, "COORDS_RELAY_URL names no relay: `make test-jvm` (tests/e2e/test_jvm.py) starts one");
    }

    CoordsApp open(String name) {
        CoordsApp app = CoordsApp.open(dir.resolve(name).toString(), "pass-" + name, AppTest.FAST);
        app.createIdentity(name, relay);
        return app;
    }

    static void befriend(CoordsApp a, CoordsApp b) {
        a.addFriendLink(b.friendLink());
        b.addFriendLink(a.friendLink());
    }

    /** Turns of the loop until nothing is due now; every turn the core made of them. */
    static List<HostLoop.Turn> loopUntilQuiet(CoordsApp app) {
        List<HostLoop.Turn> seen = new ArrayList<>();
        for (int turn = 0; turn < 10; turn++) {
            List<HostLoop.Turn> turns = HostLoop.runOnce(app);
            if (turns.isEmpty()) return seen;
            seen.addAll(turns);
        }
        throw new AssertionError("the loop never ran out of requests: " + seen.size());
    }

    /** A push or live notice: fetch now, then run the loop. */
    static List<HostLoop.Turn> woken(CoordsApp app) {
        app.fetchNow();
        return loopUntilQuiet(app);
    }

    @Test
    void aShareFetchedByAFriendAndRefusedAfterAPause() throws InterruptedException {
        try (CoordsApp alice = open("alice"); CoordsApp bob = open("bob")) {
            befriend(alice, bob);
            String aliceId = alice.info().getId();
            QueuedUpload queued = alice.queueUpload(new Location(-33.8688, 151.2093, 20, 8, System.currentTimeMillis()));
            assertTrue(queued.getOutboxId() > 0);
            List<HostLoop.Turn> sent = loopUntilQuiet(alice);
            assertTrue(sent.stream().anyMatch(t -> "outbox".equals(t.getAnswer().getResult())
                && Json.write(t.getAnswer().getDetail()).contains("\"decision\":\"delivered\"")), sent.toString());
            assertEquals(List.of(), alice.outbox(false));

            woken(bob);
            FriendLocation seen = bob.friendLocations().stream().filter(f -> f.getId().equals(aliceId)).findFirst().orElseThrow();
            assertNotNull(seen.getLocation());
            assertEquals(-33.8688, seen.getLocation().getLatitude(), 1e-6);
            assertEquals("verified", seen.getAuthenticity());

            alice.pause(bob.info().getId());
            Thread.sleep(1_050);  // the relay keeps whole-second upload times: the reseal is a newer second
            List<HostLoop.Turn> resealed = loopUntilQuiet(alice);
            assertTrue(resealed.stream().anyMatch(t -> "reseal".equals(t.getRequest().getOutboxKind())), resealed.toString());
            List<HostLoop.Turn> fetched = woken(bob);
            HostLoop.Turn fetch = fetched.stream().filter(t -> t.getRequest().getPurpose().equals("fetch")).findFirst().orElseThrow();
            Map<String, Object> locations = Json.asObject(fetch.getAnswer().getDetail().get("locations"), "locations");
            String refusal = Json.write(locations.get("rejected"));
            assertTrue(refusal.contains(aliceId) && refusal.contains(String.valueOf(ErrorCode.NOT_A_RECIPIENT)), refusal);
        }
    }

    @Test
    void messagesBothWays() {
        try (CoordsApp alice = open("alice"); CoordsApp bob = open("bob")) {
            befriend(alice, bob);
            loopUntilQuiet(alice);  // prekeys published, bundles fetched
            loopUntilQuiet(bob);
            String bobId = bob.info().getId();
            String aliceId = alice.info().getId();
            Sent sent = alice.sendMessage(bobId, "on my way ☕");
            assertEquals("queued", sent.getMessage().getStatus());
            loopUntilQuiet(alice);
            woken(bob);
            List<Message> history = bob.history(aliceId, 0);
            assertEquals("on my way ☕", history.get(history.size() - 1).getText());
            bob.sendMessage(aliceId, "see you");
            loopUntilQuiet(bob);
            woken(alice);
            List<Message> back = alice.history(bobId, 0);
            assertTrue(back.stream().anyMatch(m -> m.getText().equals("see you") && !m.getOutgoing()), back.toString());
            assertEquals(1, alice.conversations().size());
        }
    }

    @Test
    void aGroupSession() {
        try (CoordsApp alice = open("alice"); CoordsApp bob = open("bob"); CoordsApp carol = open("carol")) {
            befriend(alice, bob);
            befriend(alice, carol);
            befriend(bob, carol);
            for (CoordsApp app : List.of(alice, bob, carol)) loopUntilQuiet(app);
            GroupChange created = alice.createGroup("Hike", List.of(bob.info().getId(), carol.info().getId()));
            String group = created.getGroup().getId();
            assertEquals(3, created.getGroup().getMembers().size());
            loopUntilQuiet(alice);
            woken(bob);
            woken(carol);
            assertEquals(List.of("Hike"), bob.groups().stream().map(Group::getName).toList());
            GroupSent sent = alice.sendGroupMessage(group, "summit at noon");
            assertEquals(List.of(), sent.getUnreachable());
            loopUntilQuiet(alice);
            woken(bob);
            woken(carol);
            for (CoordsApp reader : List.of(bob, carol)) {
                List<Message> history = reader.groupHistory(group, 0);
                assertTrue(history.stream().anyMatch(m -> m.getText().equals("summit at noon")), history.toString());
            }
            carol.sendGroupMessage(group, "bringing water");
            loopUntilQuiet(carol);
            woken(alice);
            assertTrue(alice.groupHistory(group, 0).stream().anyMatch(m -> m.getText().equals("bringing water")));
        }
    }

    /** POSIX open/close, for the descriptors a file transfer reads and writes (Android: ParcelFileDescriptor). */
    interface Libc extends Library {
        Libc C = com.sun.jna.Native.load("c", Libc.class);

        int open(String path, int flags, int mode);

        int close(int fd);
    }

    @Test
    void aFileSentToAFriendArrivesWhole() throws Exception {
        try (CoordsApp alice = open("alice"); CoordsApp bob = open("bob")) {
            befriend(alice, bob);
            loopUntilQuiet(alice);
            loopUntilQuiet(bob);
            byte[] content = new byte[300_000];
            new Random(7).nextBytes(content);
            Path source = dir.resolve("route.gpx");
            Files.write(source, content);
            int in = Libc.C.open(source.toString(), 0, 0);
            assertTrue(in >= 0);
            Sent sent;
            try (FileUpload upload = alice.beginUpload(in)) {
                for (Request part = upload.next(); part != null; part = upload.next()) {
                    HostLoop.Answer answer = HostLoop.perform(part);
                    assertEquals(0, upload.process(answer.getStatus(), answer.getBody(), null), new String(answer.getBody()));
                }
                assertEquals(content.length, upload.progress().getDone());
                sent = upload.send(bob.info().getId(), "application/gpx+xml", "route.gpx", "tomorrow");
            } finally {
                Libc.C.close(in);
            }
            loopUntilQuiet(alice);
            woken(bob);
            Message received = bob.history(alice.info().getId(), 0).stream().filter(m -> m.getId().equals(sent.getMessage().getId()))
                .findFirst().orElseThrow();
            assertNotNull(received.getFile());
            assertEquals(content.length, received.getFile().getSize());

            Path target = dir.resolve("copy.gpx");
            int out = Libc.C.open(target.toString(), 0x241, 0600);  // O_WRONLY | O_CREAT | O_TRUNC
            assertTrue(out >= 0);
            try (FileDownload download = bob.beginDownload(received.getId(), out)) {
                boolean complete = false;
                for (int attempt = 0; attempt < 5 && !complete; attempt++) {
                    Transfer.Ranged next = download.request();
                    HttpURLConnection connection = (HttpURLConnection) URI.create(next.getRequest().getUrl()).toURL().openConnection();
                    for (Map.Entry<String, Object> header : next.getRequest().getHeaders().entrySet()) {
                        connection.setRequestProperty(header.getKey(), String.valueOf(header.getValue()));
                    }
                    int status = connection.getResponseCode();
                    assertEquals(0, download.check(status, connection.getHeaderField("Retry-After"), connection.getHeaderField("Content-Length")));
                    try (InputStream body = connection.getInputStream()) {
                        byte[] chunk = new byte[65_536];
                        for (int n = body.read(chunk); n > 0; n = body.read(chunk)) {
                            assertTrue(download.pace(n));
                            download.take(Arrays.copyOf(chunk, n));
                        }
                    }
                    complete = download.finish();
                }
                assertTrue(complete);
                assertEquals(content.length, download.progress().getDone());
            } finally {
                Libc.C.close(out);
            }
            assertArrayEquals(content, Files.readAllBytes(target));
        }
    }
}
