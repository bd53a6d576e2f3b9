package org.coordscore;

import java.util.HashMap;
import java.util.Map;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * Where an app keeps its secrets when the host owns the keychain (the Android Keystore, a
 * secrets service): the identity seed, the store key {@code store.dek} (losing it makes the
 * store unreadable: STORE_KEY_MISSING) and the short-lived keys of disappearing messages
 * ({@code store.shred.*}). The library may call these from any thread, concurrently: they must
 * be thread-safe. An exception thrown here fails that call with
 * {@link ErrorCode#HOST_KEYCHAIN}.
 */
public interface Keychain {
    /**
     * Stores {@code secret} under {@code name}, replacing any previous value.
     *
     * @param name the entry
     * @param secret the bytes (a copy the keychain may keep)
     */
    void save(@NotNull String name, byte @NotNull [] secret);

    /**
     * The secret under {@code name}.
     *
     * @param name the entry
     * @return the bytes, or null when there is no such entry
     */
    byte @Nullable [] load(@NotNull String name);

    /**
     * Forgets {@code name} (no error when it did not exist).
     *
     * @param name the entry
     */
    void remove(@NotNull String name);

    /** A keychain in memory (tests, and hosts that persist nothing): lost when the process ends. */
    final class InMemory implements Keychain {
        private final Map<String, byte[]> entries = new HashMap<>();

        /** An empty keychain. */
        public InMemory() {}

        @Override
        public synchronized void save(@NotNull String name, byte @NotNull [] secret) {
            entries.put(name, secret.clone());
        }

        @Override
        public synchronized byte @Nullable [] load(@NotNull String name) {
            byte[] secret = entries.get(name);
            return secret == null ? null : secret.clone();
        }

        @Override
        public synchronized void remove(@NotNull String name) {
            entries.remove(name);
        }
    }
}
