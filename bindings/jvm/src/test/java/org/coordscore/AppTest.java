package org.coordscore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An app's life without a relay: identity, friends, updates, keychains, close, hostile arguments. */
class AppTest {
    static final Map<String, Object> FAST = Map.of("keychain_cost", "minimum", "backup_cost", "minimum", "durability", "no_sync");
    static final String RELAY = "https://relay.example";

    @TempDir
    Path dir;

    CoordsApp open(String name) {
        return CoordsApp.open(dir.resolve(name).toString(), "pass-" + name, FAST);
    }

    @Test
    void anIdentityFriendsAndABackup() {
        try (CoordsApp alice = open("alice"); CoordsApp bob = open("bob")) {
            assertFalse(alice.info().getHasIdentity());
            assertEquals(ErrorCode.NO_IDENTITY, assertThrows(CoordsException.ManagerException.class, alice::publicKey).code());
            String aliceId = alice.createIdentity("Alice", RELAY);
            String bobId = bob.createIdentity("Bob", RELAY);
            assertEquals(aliceId, Coords.publicKeyB64url(alice.publicKey()));
            assertEquals(ErrorCode.IDENTITY_EXISTS, assertThrows(CoordsException.ManagerException.class, () -> alice.createIdentity("A", RELAY)).code());
            WalletInfo info = alice.info();
            assertTrue(info.getHasIdentity());
            assertEquals("Alice", info.getName());
            assertEquals(aliceId, info.getId());

            Friend bobAsFriend = alice.addFriendLink(bob.friendLink());
            assertEquals(bobId, bobAsFriend.getId());
            assertEquals("Bob", bobAsFriend.getName());
            assertTrue(bobAsFriend.getShareWith());
            assertNull(bobAsFriend.getShareUntil());
            assertEquals(List.of(bobAsFriend.getId()), alice.friends().stream().map(Friend::getId).toList());
            assertEquals(ErrorCode.CANNOT_ADD_SELF, assertThrows(CoordsException.class, () -> alice.addFriendLink(alice.friendLink())).code());
            assertEquals("paused", alice.pause(bobId).getSharing());
            assertEquals(alice.safetyNumber(bob.publicKey()), bob.safetyNumber(alice.publicKey()));
            byte[] signature = alice.sign(new byte[] {1, 2, 3});
            assertTrue(Coords.verify(alice.publicKey(), new byte[] {1, 2, 3}, signature));
            alice.removeFriend(bobId);
            assertEquals(ErrorCode.FRIEND_NOT_FOUND, assertThrows(CoordsException.ManagerException.class, () -> alice.removeFriend(bobId)).code());

            byte[] backup = alice.exportBackup("backup words");
            try (CoordsApp restored = open("restored")) {
                assertEquals(ErrorCode.WRONG_BACKUP_PASSPHRASE,
                    assertThrows(CoordsException.ManagerException.class, () -> restored.importBackup(backup, "wrong")).code());
                assertEquals(aliceId, restored.importBackup(backup, "backup words"));
                assertArrayEquals(alice.publicKey(), restored.publicKey());
            }
        }
    }

    @Test
    void theDataDirectoryAndEverythingInItIsTheOwnersAlone() throws Exception {
        try (CoordsApp app = open("private")) {
            app.createIdentity("Private", RELAY);
            app.exportBackup("words");
        }
        Path where = dir.resolve("private");
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(java.nio.file.Files.getPosixFilePermissions(where)));
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(where)) {
            for (Path file : files.toList()) {
                String permissions = java.nio.file.attribute.PosixFilePermissions.toString(java.nio.file.Files.getPosixFilePermissions(file));
                assertTrue(permissions.endsWith("------"), file + " is " + permissions);
            }
        }
    }

    @Test
    void aClosedAppRefusesEveryCallAndClosesOnce() {
        CoordsApp app = open("closing");
        app.createIdentity("Closing", RELAY);
        app.close();
        assertTrue(app.isClosed());
        app.close();  // idempotent
        assertEquals(ErrorCode.INVALID_HANDLE, assertThrows(CoordsException.ArgumentException.class, app::info).code());
        assertEquals(ErrorCode.INVALID_HANDLE, assertThrows(CoordsException.ArgumentException.class, () -> app.due(0)).code());
        assertEquals(ErrorCode.INVALID_HANDLE,
            assertThrows(CoordsException.ArgumentException.class, () -> app.setUpdateListener(update -> { }, null)).code());
        // The directory is free again, and the passphrase still guards it.
        assertEquals(ErrorCode.WRONG_PASSPHRASE, assertThrows(CoordsException.ManagerException.class,
            () -> CoordsApp.open(dir.resolve("closing").toString(), "not the passphrase", FAST)).code());
        try (CoordsApp again = open("closing")) {
            assertEquals("Closing", again.info().getName());
            assertEquals(ErrorCode.STORE_ALREADY_OPEN, assertThrows(CoordsException.StoreException.class, () -> open("closing")).code());
        }
    }

    @Test
    void anAppNobodyClosedIsReleasedWhenCollected() throws InterruptedException {
        String where = dir.resolve("forgotten").toString();
        CoordsApp.open(where, "p", FAST).createIdentity("Forgotten", RELAY);  // never closed, unreachable at once
        for (int attempt = 0; attempt < 100; attempt++) {
            System.gc();
            Thread.sleep(20);
            try (CoordsApp reopened = CoordsApp.open(where, "p", FAST)) {
                assertEquals("Forgotten", reopened.info().getName());
                return;
            } catch (CoordsException.StoreException stillOpen) {
                assertEquals(ErrorCode.STORE_ALREADY_OPEN, stillOpen.code());
            }
        }
        throw new AssertionError("the cleaner never closed the unreachable app");
    }

    @Test
    void updatesArriveOnTheLibraryThreadAndAListenersExceptionIsNeverLost() throws InterruptedException {
        try (CoordsApp app = open("updates")) {
            app.createIdentity("Updates", RELAY);
            BlockingQueue<Map<String, Object>> seen = new ArrayBlockingQueue<>(64);
            BlockingQueue<String> threads = new ArrayBlockingQueue<>(64);
            BlockingQueue<Throwable> errors = new ArrayBlockingQueue<>(64);
            app.setUpdateListener(update -> {
                threads.add(Thread.currentThread().getName());
                seen.add(update);
                throw new IllegalStateException("a listener's bug");
            }, errors::add);
            app.addFriend(Coords.publicKeyB64url(Coords.generateIdentity().getPublicKey()), RELAY, "Friend", true, true);
            Map<String, Object> update = seen.poll(10, TimeUnit.SECONDS);
            assertNotNull(update, "no update arrived");
            assertTrue(update.containsKey("type"), update.toString());
            assertNotEquals(Thread.currentThread().getName(), threads.poll(1, TimeUnit.SECONDS));
            Throwable error = errors.poll(10, TimeUnit.SECONDS);
            assertTrue(error instanceof IllegalStateException, String.valueOf(error));
            // A second update still arrives after the listener threw.
            app.addFriend(Coords.publicKeyB64url(Coords.generateIdentity().getPublicKey()), RELAY, "Another", true, true);
            assertNotNull(seen.poll(10, TimeUnit.SECONDS));
            app.setUpdateListener(null, null);
            app.addFriend(Coords.publicKeyB64url(Coords.generateIdentity().getPublicKey()), RELAY, "Third", true, true);
            assertFalse(app.updates().isEmpty(), "with no listener, updates queue for nextUpdate");
            assertNull(app.nextUpdate(0));
        }
    }

    @Test
    void aHostKeychainHoldsTheSecrets() {
        Keychain.InMemory keychain = new Keychain.InMemory();
        String where = dir.resolve("keychain").toString();
        String id;
        try (CoordsApp app = CoordsApp.open(where, keychain, FAST)) {
            id = app.createIdentity("Keychain", RELAY);
        }
        assertNotNull(keychain.load("store.dek"));
        try (CoordsApp again = CoordsApp.open(where, keychain, FAST)) {
            assertEquals(id, again.info().getId());
        }
        // Without the store key the store does not open, and nothing is changed.
        assertThrows(CoordsException.class, () -> CoordsApp.open(where, new Keychain.InMemory(), FAST).close());
        Keychain broken = new Keychain() {
            @Override
            public void save(String name, byte[] secret) {
                throw new IllegalStateException("the keystore is locked");
            }

            @Override
            public byte[] load(String name) {
                return null;
            }

            @Override
            public void remove(String name) {}
        };
        assertEquals(ErrorCode.HOST_KEYCHAIN,
            assertThrows(CoordsException.class, () -> CoordsApp.open(dir.resolve("broken").toString(), broken, FAST).close()).code());
    }

    @Test
    void hostileArgumentsToAnAppFailWithTheirCode() {
        try (CoordsApp app = open("hostile")) {
            app.createIdentity("Hostile", RELAY);
            assertEquals(ErrorCode.INVALID_PUBLIC_KEY_ID, assertThrows(CoordsException.class, () -> app.addFriend("not a key", RELAY, "", true, true)).code());
            assertThrows(CoordsException.WireException.class, () -> app.addFriendLink("coord://garbage"));
            assertThrows(CoordsException.WireException.class, () -> app.processFetchResponse(new byte[] {'{', 0, (byte) 0xff}));
            assertThrows(CoordsException.WireException.class, () -> app.processFetchResponse("[1,2,3]".getBytes()));
            assertThrows(CoordsException.class, () -> app.prepareUpload(new Location(Double.POSITIVE_INFINITY, 0, 1)));
            assertThrows(CoordsException.class, () -> app.sendMessage("nobody", "hi"));
            assertThrows(CoordsException.class, () -> app.sendGroupMessage("no such group", "hi"));
            assertEquals("unknown", app.report(123_456, 200, new byte[0]).getResult());
            assertThrows(CoordsException.ArgumentException.class, () -> app.setFetchInterval(-1L));
            assertThrows(CoordsException.ArgumentException.class, () -> app.updateFriend("x\0y", Map.of()));
            assertThrows(CoordsException.ArgumentException.class, () -> CoordsApp.open(dir.resolve("k").toString(), new byte[5], FAST));
        }
    }

    @Test
    void theKotlinUsageFileRuns() throws Exception {
        Class<?> usage = Class.forName("UsageKt");
        Method shareOnce = usage.getMethod("shareOnce", String.class);
        String summary = (String) shareOnce.invoke(null, dir.resolve("kotlin").toString());
        assertTrue(summary.contains("friends=1 until=null") && summary.contains("stranger=refused") && summary.endsWith("closed=false"), summary);
    }
}
