package org.coordscore;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.jetbrains.annotations.NotNull;

/**
 * The one-wake host loop with {@code HttpURLConnection} (on the JVM and on Android): each turn
 * performs every request {@link CoordsApp#due} hands out, on the calling thread, and reports each
 * answer. The relay is untrusted: the connection must open within 5 s, the answer may be silent
 * for at most 15 s, take at most 30 s in all and be no longer than the request's
 * {@code max_response_bytes} (64 KiB when it names none); a redirect is reported as it is, never
 * followed. A request that gets no acceptable answer is reported with status 0 and the failure's
 * description, which the core backs off from.
 */
public final class HostLoop {
    private HostLoop() {}

    /** Milliseconds to open the connection. */
    public static final int CONNECT_TIMEOUT_MS = 5_000;
    /** Milliseconds without a byte while reading. */
    public static final int IDLE_TIMEOUT_MS = 15_000;
    /** Milliseconds for the whole exchange. */
    public static final long TOTAL_TIMEOUT_MS = 30_000;
    /** The answer cap for a request that names none. */
    public static final long DEFAULT_MAX_RESPONSE_BYTES = 65_536;

    /** What one performed request came to: the request, the answer given to the core, and the core's reading of it. */
    public static final class Turn {
        private final HostRequest request;
        private final int status;
        private final HostAnswer answer;

        Turn(HostRequest request, int status, HostAnswer answer) {
            this.request = request;
            this.status = status;
            this.answer = answer;
        }

        /** @return the request the core handed out */
        public @NotNull HostRequest getRequest() {
            return request;
        }

        /** @return the HTTP status reported (0: no acceptable answer) */
        public int getStatus() {
            return status;
        }

        /** @return what the core made of the answer */
        public @NotNull HostAnswer getAnswer() {
            return answer;
        }

        @Override
        public String toString() {
            return "Turn[" + request.getPurpose() + " " + request.getRequest().getMethod() + " " + request.getRequest().getUrl() + " -> " + status
                + " " + answer + "]";
        }
    }

    /** An answer: status and body. */
    public static final class Answer {
        private final int status;
        private final byte[] body;

        Answer(int status, byte[] body) {
            this.status = status;
            this.body = body;
        }

        /** @return the HTTP status, or 0 when there was no acceptable answer */
        public int getStatus() {
            return status;
        }

        /** @return the body (for status 0, the failure's description in UTF-8) */
        public byte @NotNull [] getBody() {
            return body.clone();
        }
    }

    /**
     * One turn: performs every due request and reports each answer.
     *
     * @param app the app
     * @return each request with what the core made of its answer
     * @throws CoordsException StoreException from the core (never a transport failure: those are answers too)
     */
    public static @NotNull List<Turn> runOnce(@NotNull CoordsApp app) {
        List<Turn> out = new ArrayList<>();
        for (HostRequest request : app.due(0)) {
            Answer answer = perform(request.getRequest());
            out.add(new Turn(request, answer.status, app.report(request.getId(), answer.status, answer.body)));
        }
        return out;
    }

    /**
     * Runs turns on this thread until {@code until} is true, sleeping until
     * {@link CoordsApp#nextWake()} between them (at most {@code longestSleepMs}, so
     * {@code until} is looked at).
     *
     * @param app the app
     * @param until when to stop
     * @param longestSleepMs the longest sleep
     * @throws InterruptedException when the thread is interrupted while sleeping
     */
    public static void run(@NotNull CoordsApp app, @NotNull BooleanSupplier until, long longestSleepMs) throws InterruptedException {
        while (!until.getAsBoolean()) {
            runOnce(app);
            Long wake = app.nextWake();
            long now = System.currentTimeMillis();
            long delay = wake == null ? longestSleepMs : Math.max(0, Math.min(longestSleepMs, wake - now));
            if (delay > 0) Thread.sleep(delay);
        }
    }

    /**
     * Performs one prepared request within the limits above.
     *
     * @param request the request
     * @return the answer, or status 0 and the failure's description
     */
    public static @NotNull Answer perform(@NotNull Request request) {
        long cap = request.getMaxResponseBytes() == null ? DEFAULT_MAX_RESPONSE_BYTES : request.getMaxResponseBytes();
        long deadline = System.nanoTime() + TOTAL_TIMEOUT_MS * 1_000_000L;
        HttpURLConnection connection = null;
        try {
            URL url = URI.create(request.getUrl()).toURL();
            if (!url.getProtocol().equals("https") && !url.getProtocol().equals("http")) {
                return failed("not an http(s) URL: " + request.getUrl());
            }
            connection = (HttpURLConnection) url.openConnection();
            connection.setInstanceFollowRedirects(false);
            connection.setConnectTimeout(CONNECT_TIMEOUT_MS);
            connection.setReadTimeout(IDLE_TIMEOUT_MS);
            connection.setRequestMethod(request.getMethod());
            for (Map.Entry<String, Object> header : request.getHeaders().entrySet()) {
                connection.setRequestProperty(header.getKey(), String.valueOf(header.getValue()));
            }
            byte[] body = Base64.getDecoder().decode(request.getBodyBase64());
            if (body.length > 0 || request.getMethod().equals("POST") || request.getMethod().equals("PUT")) {
                connection.setDoOutput(true);
                connection.setFixedLengthStreamingMode(body.length);
                try (OutputStream out = connection.getOutputStream()) {
                    out.write(body);
                }
            }
            int status = connection.getResponseCode();
            long declared = connection.getContentLengthLong();
            if (declared > cap) return failed("the answer is " + declared + " bytes, more than the " + cap + " allowed");
            InputStream in = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
            ByteArrayOutputStream collected = new ByteArrayOutputStream();
            if (in != null) {
                try (InputStream stream = in) {
                    byte[] chunk = new byte[16384];
                    int n;
                    while ((n = stream.read(chunk)) > 0) {
                        if (collected.size() + (long) n > cap) return failed("the answer is longer than the " + cap + " bytes allowed");
                        if (System.nanoTime() > deadline) return failed("the answer took longer than " + TOTAL_TIMEOUT_MS + " ms");
                        collected.write(chunk, 0, n);
                    }
                }
            }
            return new Answer(status, collected.toByteArray());
        } catch (IOException | IllegalArgumentException error) {
            return failed("the relay could not be asked: " + error);
        } finally {
            if (connection != null) connection.disconnect();
        }
    }

    private static Answer failed(String why) {
        return new Answer(0, why.getBytes(StandardCharsets.UTF_8));
    }
}
