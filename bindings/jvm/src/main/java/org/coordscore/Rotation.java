package org.coordscore;

import java.util.List;
import java.util.Map;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/** What a key rotation produced ({@link CoordsApp#rotate}; PROTOCOL.md §9.1). */
public final class Rotation {
    private final String id;
    private final Object statement;
    private final List<OutboxEntry> statements;
    private final Upload upload;
    private final Request deletePrevious;

    Rotation(String id, Object statement, List<OutboxEntry> statements, Upload upload, Request deletePrevious) {
        this.id = id;
        this.statement = statement;
        this.statements = Json.frozen(statements);
        this.upload = upload;
        this.deletePrevious = deletePrevious;
    }

    static Rotation fromJson(Object value) {
        Map<String, Object> o = Json.asObject(value, "rotation");
        return new Rotation(Json.string(o, "id"), o.get("statement"), Json.list(o, "statements", Json.REQUIRED, OutboxEntry::fromJson, List.of()),
            Json.optRecord(o, "upload", Upload::fromJson), Request.fromJson(Json.member(o, "delete_previous")));
    }

    /** @return the new id */
    public @NotNull String getId() {
        return id;
    }

    /** @return the signed rotation statement (JSON) */
    public @Nullable Object getStatement() {
        return statement;
    }

    /** @return the statements queued for friends (the host loop sends them) */
    public @NotNull List<OutboxEntry> getStatements() {
        return statements;
    }

    /** @return the upload under the new key, or null when there was no position */
    public @Nullable Upload getUpload() {
        return upload;
    }

    /** @return the request deleting the old key's blob */
    public @NotNull Request getDeletePrevious() {
        return deletePrevious;
    }
}
