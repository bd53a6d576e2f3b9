package org.coordscore;

import com.sun.jna.Pointer;
import java.lang.ref.Cleaner;
import java.util.function.Consumer;

/**
 * A library handle released exactly once: by {@code close()}, or by the cleaner when its owner
 * becomes unreachable. Holds no reference to its owner.
 */
final class Handle implements Runnable {
    static final Cleaner CLEANER = Cleaner.create();

    private final String what;
    private final Consumer<Pointer> release;
    private Pointer pointer;

    Handle(String what, Pointer pointer, Consumer<Pointer> release) {
        this.what = what;
        this.pointer = pointer;
        this.release = release;
    }

    synchronized Pointer get() {
        if (pointer == null) throw CoordsException.of(ErrorCode.INVALID_HANDLE, "the " + what + " is closed");
        return pointer;
    }

    synchronized boolean closed() {
        return pointer == null;
    }

    @Override
    public void run() {
        Pointer releasing;
        synchronized (this) {
            releasing = pointer;
            pointer = null;
        }
        if (releasing != null) release.accept(releasing);
    }
}
