package org.coordscore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** HostLoop.perform against a hostile relay: huge, endless, redirecting and absent answers. */
class HostLoopHostileTest {
    HttpServer server;
    String base;

    @BeforeEach
    void start() throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/huge", exchange -> {
            exchange.sendResponseHeaders(200, 10_000_000);  // declares more than the cap, sends nothing
            exchange.close();
        });
        server.createContext("/endless", exchange -> {
            exchange.sendResponseHeaders(200, 0);  // chunked, no end
            try (OutputStream out = exchange.getResponseBody()) {
                byte[] chunk = new byte[65_536];
                for (int i = 0; i < 10_000; i++) out.write(chunk);
            } catch (java.io.IOException clientLeft) {
                // the client stopped reading: what the test wants
            }
        });
        server.createContext("/redirect", exchange -> {
            exchange.getResponseHeaders().add("Location", "http://169.254.169.254/latest");
            exchange.sendResponseHeaders(302, -1);
            exchange.close();
        });
        server.createContext("/ok", exchange -> {
            byte[] body = "{\"fine\":true}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        base = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    Request get(String path, Long cap) {
        return new Request(base + path, "GET", Map.of(), Base64.getEncoder().encodeToString(new byte[0]), null, null, cap);
    }

    @Test
    void anAnswerLongerThanTheCapIsRefusedWithoutBeingRead() {
        HostLoop.Answer huge = HostLoop.perform(get("/huge", 65_536L));
        assertEquals(0, huge.getStatus());
        assertTrue(new String(huge.getBody(), StandardCharsets.UTF_8).contains("more than"), new String(huge.getBody()));
        HostLoop.Answer endless = HostLoop.perform(get("/endless", 100_000L));
        assertEquals(0, endless.getStatus());
        assertTrue(new String(endless.getBody(), StandardCharsets.UTF_8).contains("longer than"), new String(endless.getBody()));
    }

    @Test
    void aRedirectIsReportedNotFollowedAndAnAbsentRelayIsStatusZero() {
        assertEquals(302, HostLoop.perform(get("/redirect", null)).getStatus());
        assertEquals(200, HostLoop.perform(get("/ok", null)).getStatus());
        server.stop(0);
        HostLoop.Answer absent = HostLoop.perform(get("/ok", null));
        assertEquals(0, absent.getStatus());
        assertTrue(new String(absent.getBody(), StandardCharsets.UTF_8).startsWith("the relay could not be asked"));
    }
}
