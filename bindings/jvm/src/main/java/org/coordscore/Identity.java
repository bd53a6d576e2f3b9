package org.coordscore;

import org.jetbrains.annotations.NotNull;

/**
 * A generated identity: the 32-byte secret seed (keep it in the platform keychain) and the
 * 32-byte Ed25519 public key. The arrays are copies; wipe the seed when done
 * ({@code java.util.Arrays.fill(seed, (byte) 0)}).
 */
public final class Identity {
    private final byte[] seed;
    private final byte[] publicKey;

    Identity(byte[] seed, byte[] publicKey) {
        this.seed = seed;
        this.publicKey = publicKey;
    }

    /** @return a copy of the 32-byte secret seed */
    public byte @NotNull [] getSeed() {
        return seed.clone();
    }

    /** @return a copy of the 32-byte public key */
    public byte @NotNull [] getPublicKey() {
        return publicKey.clone();
    }

    @Override
    public String toString() {
        return "Identity[publicKey=" + Coords.b64url(publicKey) + ", seed=(hidden)]";
    }
}
