package org.coordscore;

import org.jetbrains.annotations.NotNull;

/** The small answers of a file transfer ({@link FileUpload}, {@link FileDownload}). */
public final class Transfer {
    private Transfer() {}

    /** How far a transfer is: bytes done of the file's size. */
    public static final class Progress {
        private final long done;
        private final long size;

        Progress(long done, long size) {
            this.done = done;
            this.size = size;
        }

        /** @return bytes the relay holds (upload) or written (download) */
        public long getDone() {
            return done;
        }

        /** @return the file's size in bytes */
        public long getSize() {
            return size;
        }

        @Override
        public String toString() {
            return done + "/" + size;
        }
    }

    /**
     * The core's transfer rule after a failed try (PROTOCOL.md §12.5): wait and try again, or
     * give up with a reason.
     */
    public static final class Retry {
        private final long waitSeconds;
        private final String reason;

        Retry(long waitSeconds, String reason) {
            this.waitSeconds = waitSeconds;
            this.reason = reason;
        }

        /** @return seconds to wait before the next try (at most 60; 0 when giving up) */
        public long getWaitSeconds() {
            return waitSeconds;
        }

        /** @return why the transfer gives up, or "" when it tries again */
        public @NotNull String getReason() {
            return reason;
        }

        /** @return whether the transfer gave up */
        public boolean getGaveUp() {
            return !reason.isEmpty();
        }

        @Override
        public String toString() {
            return reason.isEmpty() ? "Retry[in " + waitSeconds + " s]" : "Retry[gave up: " + reason + "]";
        }
    }

    /** A download's next request and the most body bytes to read of its answer. */
    public static final class Ranged {
        private final Request request;
        private final long maxBytes;

        Ranged(Request request, long maxBytes) {
            this.request = request;
            this.maxBytes = maxBytes;
        }

        /** @return the GET to send (with Range after a break) */
        public @NotNull Request getRequest() {
            return request;
        }

        /** @return the most body bytes to read */
        public long getMaxBytes() {
            return maxBytes;
        }
    }
}
