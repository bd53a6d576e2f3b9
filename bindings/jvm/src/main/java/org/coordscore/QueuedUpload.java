package org.coordscore;

import org.jetbrains.annotations.NotNull;

/** An upload queued in the outbox (CoordsApp.queueUpload): the prepared upload and its outbox id. */
public final class QueuedUpload {
    private final Upload upload;
    private final long outboxId;

    QueuedUpload(Upload upload, long outboxId) {
        this.upload = upload;
        this.outboxId = outboxId;
    }

    /** @return the prepared upload */
    public @NotNull Upload getUpload() {
        return upload;
    }

    /** @return its outbox entry's id */
    public long getOutboxId() {
        return outboxId;
    }

    @Override
    public String toString() {
        return "QueuedUpload[outboxId=" + outboxId + ", upload=" + upload + "]";
    }
}
