package org.coordscore;

import java.util.Map;
import org.jetbrains.annotations.NotNull;

/**
 * Receives each update of an app (a friend's new position, a message, an outbox entry's fate…)
 * as its JSON object (docs/ABI.md, "Updates"). Called on the library's update thread — one
 * thread per app, started when a listener is set and stopped when it is removed or the app
 * closes — one update at a time; keep it short and hand work to your own executor.
 */
@FunctionalInterface
public interface UpdateListener {
    /**
     * One update.
     *
     * @param update the update's JSON object ({@code "type"} says which)
     */
    void onUpdate(@NotNull Map<String, Object> update);
}
