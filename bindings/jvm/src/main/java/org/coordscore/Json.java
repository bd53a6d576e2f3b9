package org.coordscore;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jetbrains.annotations.NotNull;
import org.jetbrains.annotations.Nullable;

/**
 * The JSON the library speaks, without a dependency: a strict RFC 8259 parser and writer over
 * plain Java values. Objects are {@code Map<String, Object>} (insertion order kept), arrays
 * {@code List<Object>}, strings {@code String}, {@code true}/{@code false} {@code Boolean},
 * {@code null} null, and numbers {@code Long} when integral (an unsigned 64-bit value above
 * {@code Long.MAX_VALUE}, such as a mute "forever", is kept in a {@code Long} with the same bits:
 * read it with {@code Long.toUnsignedString}) and {@code Double} otherwise.
 *
 * <p>The typed records read their fields through the helpers below; a missing field or one of
 * another type throws {@link CoordsException.WireException} with {@link ErrorCode#UNEXPECTED_JSON}.
 */
public final class Json {
    private Json() {}

    /** Nesting deeper than this is refused (no stack overflow on hostile input). */
    public static final int MAX_DEPTH = 256;

    /** A list field the JSON must carry. */
    static final boolean REQUIRED = true;
    /** A list field the JSON may leave out (its fallback is used then). */
    static final boolean OPTIONAL = false;

    // ---- Parsing ----------------------------------------------------------------------------

    /**
     * Parses one JSON value (UTF-8).
     *
     * @param utf8 the document's bytes
     * @return the value (see the class comment for the Java types)
     * @throws CoordsException.WireException INVALID_JSON when the bytes are not one JSON value
     */
    public static @Nullable Object parse(byte @NotNull [] utf8) {
        return parse(new String(utf8, StandardCharsets.UTF_8));
    }

    /**
     * Parses one JSON value.
     *
     * @param text the document
     * @return the value (see the class comment for the Java types)
     * @throws CoordsException.WireException INVALID_JSON when the text is not one JSON value
     */
    public static @Nullable Object parse(@NotNull String text) {
        Parser parser = new Parser(text);
        parser.space();
        Object value = parser.value(0);
        parser.space();
        if (parser.at != text.length()) throw parser.fail("text after the value");
        return value;
    }

    private static final class Parser {
        final String text;
        int at;

        Parser(String text) {
            this.text = text;
        }

        CoordsException fail(String what) {
            return CoordsException.of(ErrorCode.INVALID_JSON, "invalid JSON at offset " + at + ": " + what);
        }

        void space() {
            while (at < text.length()) {
                char c = text.charAt(at);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
                at++;
            }
        }

        char peek() {
            if (at >= text.length()) throw fail("unexpected end");
            return text.charAt(at);
        }

        void expect(String word) {
            if (!text.startsWith(word, at)) throw fail("expected " + word);
            at += word.length();
        }

        Object value(int depth) {
            if (depth > MAX_DEPTH) throw fail("nested deeper than " + MAX_DEPTH);
            char c = peek();
            switch (c) {
                case '{': return object(depth);
                case '[': return array(depth);
                case '"': return string();
                case 't': expect("true"); return Boolean.TRUE;
                case 'f': expect("false"); return Boolean.FALSE;
                case 'n': expect("null"); return null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw fail("unexpected character");
            }
        }

        Map<String, Object> object(int depth) {
            at++;
            Map<String, Object> out = new LinkedHashMap<>();
            space();
            if (peek() == '}') {
                at++;
                return out;
            }
            while (true) {
                space();
                if (peek() != '"') throw fail("expected a member name");
                String key = string();
                space();
                if (peek() != ':') throw fail("expected ':'");
                at++;
                space();
                out.put(key, value(depth + 1));
                space();
                char c = peek();
                at++;
                if (c == '}') return out;
                if (c != ',') throw fail("expected ',' or '}'");
            }
        }

        List<Object> array(int depth) {
            at++;
            List<Object> out = new ArrayList<>();
            space();
            if (peek() == ']') {
                at++;
                return out;
            }
            while (true) {
                space();
                out.add(value(depth + 1));
                space();
                char c = peek();
                at++;
                if (c == ']') return out;
                if (c != ',') throw fail("expected ',' or ']'");
            }
        }

        String string() {
            at++;
            StringBuilder out = new StringBuilder();
            while (true) {
                char c = peek();
                at++;
                if (c == '"') return out.toString();
                if (c < 0x20) throw fail("a control character in a string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char e = peek();
                at++;
                switch (e) {
                    case '"': out.append('"'); break;
                    case '\\': out.append('\\'); break;
                    case '/': out.append('/'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'n': out.append('\n'); break;
                    case 'r': out.append('\r'); break;
                    case 't': out.append('\t'); break;
                    case 'u':
                        if (at + 4 > text.length()) throw fail("a short \\u escape");
                        int code = 0;
                        for (int i = 0; i < 4; i++) {
                            int digit = Character.digit(text.charAt(at + i), 16);
                            if (digit < 0) throw fail("a bad \\u escape");
                            code = code * 16 + digit;
                        }
                        at += 4;
                        out.append((char) code);
                        break;
                    default: throw fail("a bad escape");
                }
            }
        }

        Object number() {
            int start = at;
            if (peek() == '-') at++;
            boolean integral = true;
            if (peek() == '0') {
                at++;
            } else {
                if (peek() < '1' || peek() > '9') throw fail("a bad number");
                while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
            }
            if (at < text.length() && text.charAt(at) == '.') {
                integral = false;
                at++;
                if (at >= text.length() || !Character.isDigit(text.charAt(at))) throw fail("a bad fraction");
                while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
            }
            if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
                integral = false;
                at++;
                if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) at++;
                if (at >= text.length() || !Character.isDigit(text.charAt(at))) throw fail("a bad exponent");
                while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
            }
            String literal = text.substring(start, at);
            if (integral) {
                try {
                    return Long.parseLong(literal);
                } catch (NumberFormatException tooBig) {
                    try {
                        if (!literal.startsWith("-")) return Long.parseUnsignedLong(literal);
                    } catch (NumberFormatException stillTooBig) {
                        // falls through to a double
                    }
                }
            }
            return Double.parseDouble(literal);
        }
    }

    // ---- Writing ----------------------------------------------------------------------------

    /**
     * Writes a value as compact JSON: maps (string keys), lists, strings, numbers, booleans,
     * null, and the typed records' {@code Location}.
     *
     * @param value the value
     * @return the JSON text
     * @throws IllegalArgumentException for a value of another type, a non-string key or a
     *     non-finite number
     */
    public static @NotNull String write(@Nullable Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, 0);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out, int depth) {
        if (depth > MAX_DEPTH) throw new IllegalArgumentException("nested deeper than " + MAX_DEPTH);
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            quote((String) value, out);
        } else if (value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Double || value instanceof Float) {
            double number = ((Number) value).doubleValue();
            if (Double.isNaN(number) || Double.isInfinite(number)) throw new IllegalArgumentException("JSON has no " + number);
            out.append(number);
        } else if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            out.append(((Number) value).longValue());
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!(entry.getKey() instanceof String)) throw new IllegalArgumentException("a JSON object key must be a String");
                if (!first) out.append(',');
                first = false;
                quote((String) entry.getKey(), out);
                out.append(':');
                write(entry.getValue(), out, depth + 1);
            }
            out.append('}');
        } else if (value instanceof List) {
            out.append('[');
            boolean first = true;
            for (Object item : (List<?>) value) {
                if (!first) out.append(',');
                first = false;
                write(item, out, depth + 1);
            }
            out.append(']');
        } else if (value instanceof Location) {
            write(((Location) value).toJson(), out, depth);
        } else {
            throw new IllegalArgumentException("no JSON for a " + value.getClass().getName());
        }
    }

    private static void quote(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append('"');
    }

    // ---- Reading records (used by the generated records) ------------------------------------

    private static CoordsException unexpected(String what) {
        return CoordsException.of(ErrorCode.UNEXPECTED_JSON, what);
    }

    /**
     * {@code value} as a JSON object.
     *
     * @param value a parsed value
     * @param what the record being read, for the error
     * @return the object
     * @throws CoordsException.WireException UNEXPECTED_JSON when it is not an object
     */
    @SuppressWarnings("unchecked")
    public static @NotNull Map<String, Object> asObject(@Nullable Object value, @NotNull String what) {
        if (!(value instanceof Map)) throw unexpected(what + ": expected a JSON object");
        return (Map<String, Object>) value;
    }

    /**
     * {@code value} as a JSON object (for lists of objects).
     *
     * @param value a parsed value
     * @return the object
     * @throws CoordsException.WireException UNEXPECTED_JSON when it is not an object
     */
    public static @NotNull Map<String, Object> asObject(@Nullable Object value) {
        return asObject(value, "an element");
    }

    /**
     * {@code value} as a string.
     *
     * @param value a parsed value
     * @return the string
     * @throws CoordsException.WireException UNEXPECTED_JSON for another type
     */
    public static @NotNull String asString(@Nullable Object value) {
        if (!(value instanceof String)) throw unexpected("expected a string");
        return (String) value;
    }

    /**
     * {@code value} as an integer.
     *
     * @param value a parsed value
     * @return the integer
     * @throws CoordsException.WireException UNEXPECTED_JSON for another type
     */
    public static long asLong(@Nullable Object value) {
        if (!(value instanceof Long)) throw unexpected("expected an integer");
        return (Long) value;
    }

    /**
     * {@code value} as a number.
     *
     * @param value a parsed value
     * @return the number
     * @throws CoordsException.WireException UNEXPECTED_JSON for another type
     */
    public static double asDouble(@Nullable Object value) {
        if (!(value instanceof Number)) throw unexpected("expected a number");
        return ((Number) value).doubleValue();
    }

    /**
     * {@code value} as a boolean.
     *
     * @param value a parsed value
     * @return the boolean
     * @throws CoordsException.WireException UNEXPECTED_JSON for another type
     */
    public static boolean asBoolean(@Nullable Object value) {
        if (!(value instanceof Boolean)) throw unexpected("expected true or false");
        return (Boolean) value;
    }

    /**
     * {@code value} unchanged (for lists of any JSON value).
     *
     * @param value a parsed value
     * @return the same value
     */
    public static @Nullable Object any(@Nullable Object value) {
        return value;
    }

    /**
     * The member {@code key}, which must be present (it may be null).
     *
     * @param o an object
     * @param key the member's name
     * @return its value
     * @throws CoordsException.WireException UNEXPECTED_JSON when absent
     */
    public static @Nullable Object member(@NotNull Map<String, Object> o, @NotNull String key) {
        if (!o.containsKey(key)) throw unexpected("the member \"" + key + "\" is missing");
        return o.get(key);
    }

    static String string(Map<String, Object> o, String key) {
        Object value = member(o, key);
        if (!(value instanceof String)) throw unexpected("\"" + key + "\" is not a string");
        return (String) value;
    }

    static String string(Map<String, Object> o, String key, String fallback) {
        Object value = o.get(key);
        return value == null ? fallback : string(o, key);
    }

    static String optString(Map<String, Object> o, String key) {
        return o.get(key) == null ? null : string(o, key);
    }

    static long longValue(Map<String, Object> o, String key) {
        Object value = member(o, key);
        if (!(value instanceof Long)) throw unexpected("\"" + key + "\" is not an integer");
        return (Long) value;
    }

    static long longValue(Map<String, Object> o, String key, long fallback) {
        return o.get(key) == null ? fallback : longValue(o, key);
    }

    static Long optLongValue(Map<String, Object> o, String key) {
        return o.get(key) == null ? null : longValue(o, key);
    }

    static double doubleValue(Map<String, Object> o, String key) {
        Object value = member(o, key);
        if (!(value instanceof Number)) throw unexpected("\"" + key + "\" is not a number");
        return ((Number) value).doubleValue();
    }

    static double doubleValue(Map<String, Object> o, String key, double fallback) {
        return o.get(key) == null ? fallback : doubleValue(o, key);
    }

    static Double optDoubleValue(Map<String, Object> o, String key) {
        return o.get(key) == null ? null : doubleValue(o, key);
    }

    static boolean booleanValue(Map<String, Object> o, String key) {
        Object value = member(o, key);
        if (!(value instanceof Boolean)) throw unexpected("\"" + key + "\" is not true or false");
        return (Boolean) value;
    }

    static boolean booleanValue(Map<String, Object> o, String key, boolean fallback) {
        return o.get(key) == null ? fallback : booleanValue(o, key);
    }

    static Boolean optBooleanValue(Map<String, Object> o, String key) {
        return o.get(key) == null ? null : booleanValue(o, key);
    }

    static Map<String, Object> object(Map<String, Object> o, String key) {
        return asObject(member(o, key), "\"" + key + "\"");
    }

    static Map<String, Object> optObject(Map<String, Object> o, String key) {
        return o.get(key) == null ? null : object(o, key);
    }

    static Object value(Map<String, Object> o, String key) {
        return member(o, key);
    }

    static Object optValue(Map<String, Object> o, String key) {
        return o.get(key);
    }

    static <T> T optRecord(Map<String, Object> o, String key, Function<Object, T> read) {
        Object value = o.get(key);
        return value == null ? null : read.apply(value);
    }

    static <T> List<T> list(Map<String, Object> o, String key, boolean required, Function<Object, T> read, List<T> fallback) {
        Object value = required ? member(o, key) : o.get(key);
        if (value == null && !required) return fallback;
        if (!(value instanceof List)) throw unexpected("\"" + key + "\" is not an array");
        List<T> out = new ArrayList<>();
        for (Object item : (List<?>) value) out.add(read.apply(item));
        return out;
    }

    static Map<String, Object> others(Map<String, Object> o, String... known) {
        Map<String, Object> out = new LinkedHashMap<>(o);
        for (String key : known) out.remove(key);
        return out;
    }

    /**
     * An unmodifiable copy of {@code list} (null elements allowed, unlike {@code List.copyOf}).
     *
     * @param list a list
     * @param <T> its element type
     * @return the copy
     */
    public static <T> @NotNull List<T> frozen(@NotNull List<T> list) {
        return Collections.unmodifiableList(new ArrayList<>(list));
    }

    /**
     * An unmodifiable copy of {@code map} in its order (null values allowed).
     *
     * @param map a map
     * @param <V> its value type
     * @return the copy
     */
    public static <V> @NotNull Map<String, V> frozen(@NotNull Map<String, V> map) {
        return Collections.unmodifiableMap(new LinkedHashMap<>(map));
    }
}
