"""pytest suite for the C ABI through examples/coordscore.py (ctypes)."""
import base64
import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from ctypes import byref, c_bool, c_uint8

import pytest

import coordscore as cc
from coordscore import CoordsBuffer, CoordsErrorStruct, CoordsLocation, lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VECTORS = os.path.join(ROOT, "Tests", "CoordsCoreTests", "Vectors", "coords-v3.json")
FAST = dict(keychain_cost="minimum", backup_cost="minimum", durability="no_sync")
HUGE = 2 ** 63  # a size no buffer has


@pytest.fixture(scope="module")
def vectors():
    with open(VECTORS) as f:
        return json.load(f)


def raw(function, *args):
    """Calls a raw C function; returns (code, message) and frees everything."""
    error = CoordsErrorStruct()
    code = function(*args, byref(error))
    message = ctypes.string_at(error.message).decode() if error.message else None
    lib.coords_error_free(byref(error))
    assert error.message is None and error.code == 0
    if code != 0:
        assert message, f"code {code} without a message"
    return code, message


def u8(data: bytes):
    return ctypes.cast((c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0"), ctypes.POINTER(c_uint8))


# ---- Library ------------------------------------------------------------------------------

def test_every_function_has_a_signature():
    header = open(os.path.join(ROOT, "include", "coordscore.h")).read()
    import re
    declared = set(re.findall(r"\b(coords_[a-z0-9_]+)\s*\(", header))
    bound = {name for name, _, _ in cc._SIGNATURES}
    assert declared == bound


def test_version_and_abi():
    assert lib.coords_abi_version() == cc.ABI_VERSION
    assert cc.version().count(".") == 2


def test_free_functions_accept_null_and_reset():
    lib.coords_error_free(None)
    lib.coords_buffer_free(None)
    buffer = CoordsBuffer()
    lib.coords_buffer_free(byref(buffer))
    assert not buffer.data and buffer.len == 0


# ---- Vectors through the ABI ----------------------------------------------------------------

def test_vector_blobs_open_for_every_recipient(vectors):
    keys = vectors["keys"]
    for blob in vectors["blobs"]:
        data = bytes.fromhex(blob["blob_hex"])
        for index in blob["recipients"]:
            location = cc.open_blob(bytes.fromhex(keys[index]["seed"]), data)
            assert location.timestamp_ms == int.from_bytes(bytes.fromhex(blob["location_wire_hex"])[12:], "big")
        for index in blob["not_readable_by"]:
            with pytest.raises(cc.CoordsException) as error:
                cc.open_blob(bytes.fromhex(keys[index]["seed"]), data)
            assert error.value.code == cc.ERR_NOT_A_RECIPIENT


def test_vector_blob_rejects(vectors):
    seed = bytes.fromhex(vectors["keys"][0]["seed"])
    for reject in vectors["blob_rejects"]:
        with pytest.raises(cc.CoordsException) as error:
            cc.open_blob(seed, bytes.fromhex(reject["blob_hex"]))
        assert 300 <= error.value.code < 400, reject["why"]


def test_push_gateway_endpoints_seal_the_device_to_the_gateway():
    """PROTOCOL.md §8.8: every endpoint is the gateway's URL and a token of one length, fresh
    each time; the device token never shows; bad arguments are clear errors."""
    key = cc.b64url(bytes(range(1, 33)))  # any 32 bytes are an X25519 public key
    apns = cc.push_gateway_endpoint("https://push.example.com", key, "apns", "ab" * 32, "development")
    fcm = cc.push_gateway_endpoint("https://push.example.com/", key, "fcm", "abc:DEF-1_2")
    for endpoint in (apns, fcm):
        assert endpoint.startswith("https://push.example.com/up/") and len(endpoint) == 28 + 747
    assert "ab" * 32 not in apns and "abc:DEF" not in fcm
    assert cc.push_gateway_endpoint("https://push.example.com", key, "fcm", "x") != cc.push_gateway_endpoint(
        "https://push.example.com", key, "fcm", "x")
    with pytest.raises(cc.CoordsException) as caught:
        cc.push_gateway_endpoint("https://push.example.com", key, "apns", "AB" * 32)
    assert caught.value.code == cc.ERR_INVALID_PUSH_TOKEN
    with pytest.raises(cc.CoordsException) as caught:
        cc.push_gateway_endpoint("http://push.example.com", key, "fcm", "x")
    assert caught.value.code == cc.ERR_INVALID_PUSH_TOKEN
    for platform, environment, gateway_key in (("wns", None, key), ("fcm", "production", key), ("apns", "staging", key),
                                               ("fcm", None, "short")):
        with pytest.raises(cc.CoordsException) as caught:
            cc.push_gateway_endpoint("https://push.example.com", gateway_key, platform, "ab" * 32 if platform == "apns" else "x",
                                     environment)
        assert caught.value.code in (cc.ERR_INVALID_ARGUMENT, cc.ERR_INVALID_PUSH_TOKEN), (platform, environment)
    with pytest.raises(TypeError):
        cc.push_gateway_endpoint("https://push.example.com", key, "fcm", 7)  # type: ignore[arg-type]


def test_vector_keys_and_links(vectors):
    for key in vectors["keys"][:10]:
        assert cc.public_from_seed(bytes.fromhex(key["seed"])).hex() == key["ed25519_public"]
    for link in vectors["links"]:
        public = base64.urlsafe_b64decode(link["pubkey_b64url"] + "=")
        assert cc.friend_link(public, link["server"], link["name"]) == link["link"]
    for case in vectors["link_parse"]:
        if case["ok"]:
            assert cc.parse_friend_link(case["link"]) == cc.FriendLink(case["pubkey"], case["server"], case["name"])
        else:
            with pytest.raises(cc.CoordsException) as error:
                cc.parse_friend_link(case["link"])
            assert error.value.code in (cc.ERR_INVALID_FRIEND_LINK, cc.ERR_INVALID_UTF8), case["why"]


def test_vector_uploads_sign_exactly(vectors):
    for upload in vectors["uploads"]:
        seed = bytes.fromhex(vectors["keys"][upload["seed_index"]]["seed"])
        signature = cc.sign(seed, bytes.fromhex(upload["signed_message_hex"]))
        assert cc.b64url(signature) == upload["body"]["signature"]


def test_vector_fetch_response(vectors):
    response = vectors["fetch_response"]
    seed = bytes.fromhex(vectors["keys"][response["reader_seed_index"]]["seed"])
    results = cc.process_fetch_response(seed, response["body"].encode())
    assert [r["pubkey"] for r in results] == [e["pubkey"] for e in response["expected"]]
    for result, expected in zip(results, response["expected"]):
        assert result["updated"] == expected["updated"]
        if expected["location"] is None:
            assert result["location"] is None
        else:
            assert result["location"]["latitude"] == expected["location"]["latitude"]
            assert result["location"]["timestamp_ms"] == expected["location"]["timestamp"]
            assert result["authenticity"] == "unverified"


def test_safety_numbers_match_envelope_vectors():
    with open(os.path.join(ROOT, "Tests", "CoordsCoreTests", "Vectors", "envelope-v2.json")) as f:
        cases = json.load(f)["safety_numbers"]
    for case in cases:
        assert cc.safety_number(bytes.fromhex(case["a"]), bytes.fromhex(case["b"])) == case["number"]


# ---- Stateless round trips --------------------------------------------------------------------

def test_sign_verify_seal_open_round_trip():
    seed, public = cc.generate_identity()
    assert cc.public_from_seed(seed) == public
    signature = cc.sign(seed, b"hello")
    assert cc.verify(public, b"hello", signature)
    assert not cc.verify(public, b"hellO", signature)
    assert not cc.verify(bytes(32), b"hello", signature)
    friends = [cc.generate_identity() for _ in range(9)]
    here = cc.Location(-33.8688, 151.2093, altitude=12.9, accuracy=4.5, timestamp_ms=1700000000000)
    blob = cc.seal(here, [public] + [p for _, p in friends])
    assert len(blob) == 83 + 60 * 16
    for friend_seed, _ in friends:
        seen = cc.open_blob(friend_seed, blob)
        assert (seen.latitude, seen.longitude, seen.altitude, seen.accuracy) == (-33.8688, 151.2093, 12.0, 4.0)


def test_prepare_upload_and_fetch():
    seed, public = cc.generate_identity()
    _, friend = cc.generate_identity()
    request = cc.prepare_upload(seed, cc.Location(1, 2, timestamp_ms=3), [cc.b64url(friend)], "https://coord.is/")
    assert request["url"] == "https://coord.is/api/location" and request["method"] == "PUT"
    body = json.loads(cc.request_body(request))
    assert body["pubkey"] == cc.b64url(public)
    assert cc.verify(public, base64.urlsafe_b64decode(body["blob"] + "==") + body["timestamp"].to_bytes(8, "big"),
                     base64.urlsafe_b64decode(body["signature"] + "=="))
    friends = [{"pubkey": cc.b64url(cc.generate_identity()[1]), "server": "https://a.example"} for _ in range(120)]
    fetches = cc.prepare_fetch(friends)
    assert [len(f["ids"]) for f in fetches] == [50, 50, 20]
    assert json.loads(cc.request_body(fetches[0]))["ids"] == fetches[0]["ids"]


def test_may_reuse_fix():
    assert cc.may_reuse_fix(1_000, 61_000, "background")
    assert not cc.may_reuse_fix(1_000, 400_000, "background")
    assert not cc.may_reuse_fix(1_000, 2_000, "explicit")
    with pytest.raises(cc.CoordsException) as error:
        cc.may_reuse_fix(1, 2, "later")
    assert error.value.code == cc.ERR_INVALID_ARGUMENT


def test_public_key_b64url_is_the_id_everything_else_uses(tmp_path):
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as app:
        app.create_identity("Ann", "https://relay.example")
        assert cc.public_key_b64url(app.public_key()) == app.info().id
    key = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")  # RFC 8032, test 1
    assert cc.public_key_b64url(key) == base64.urlsafe_b64encode(key).rstrip(b"=").decode()
    with pytest.raises(cc.CryptoError) as error:
        cc.public_key_b64url(b"\xff" * 32)
    assert error.value.code == cc.ERR_INVALID_PUBLIC_KEY
    with pytest.raises(ValueError):
        cc.public_key_b64url(b"short")


def test_qr_codes_are_read_back_by_an_independent_decoder(tmp_path):
    """zbarimg (ZBar, Debian's zbar-tools) reads our QR codes back: a friend link, UTF-8, the
    longest text that fits."""
    zbarimg = shutil.which("zbarimg")
    assert zbarimg, "zbarimg is not installed (make deps installs Debian's zbar-tools)"
    for text in ["coord://coord.is/add/wrZlO17X0knD6RWU6jrrS_ZGltdaftqAJs7yA4RsQdE#Zo%C3%AB", "Zoë 🗺", "x" * 213]:
        rows = cc.qr_code(text)
        n = len(rows)
        assert n in range(21, 58, 4) and all(len(row) == n for row in rows)
        scale, border = 4, 4
        side = (n + 2 * border) * scale
        pixels = [[False] * side for _ in range(side)]
        for y, row in enumerate(rows):
            for x, dark in enumerate(row):
                for dy in range(scale):
                    for dx in range(scale):
                        pixels[(y + border) * scale + dy][(x + border) * scale + dx] = dark
        image = tmp_path / "code.pbm"
        image.write_text(f"P1\n{side} {side}\n" + "\n".join(" ".join("1" if p else "0" for p in line) for line in pixels) + "\n")
        read = subprocess.run([zbarimg, "--raw", "-q", "-Sbinary", str(image)], capture_output=True, timeout=60)
        assert read.returncode == 0, read.stderr
        assert read.stdout.rstrip(b"\n") == text.encode(), (text, read.stdout)
    svg = cc.qr_svg("coords", module_pixels=3)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and svg.rstrip().endswith("</svg>")
    with pytest.raises(cc.WireError) as error:
        cc.qr_code("x" * 214)
    assert error.value.code == cc.ERR_QR_UNENCODABLE
    with pytest.raises(cc.CoordsException) as error:
        cc.qr_svg("x", module_pixels=0)
    assert error.value.code == cc.ERR_INVALID_ARGUMENT


def test_may_reuse_location_needs_a_fix_better_than_100_m():
    def fix(accuracy, taken=1_000):
        return cc.Location(47.37, 8.54, 0.0, accuracy, taken)
    assert cc.may_reuse_location(fix(40), 61_000, "background")
    assert cc.may_reuse_location(fix(100), 61_000, "launch")
    assert not cc.may_reuse_location(fix(101), 61_000, "launch")
    assert not cc.may_reuse_location(fix(3_000), 61_000, "background")
    assert not cc.may_reuse_location(fix(10), 400_000, "background")
    assert not cc.may_reuse_location(fix(10), 2_000, "explicit")
    with pytest.raises(cc.WireError) as error:
        cc.may_reuse_location(cc.Location(95.0, 8.54, 0.0, 5, 1_000), 61_000, "launch")
    assert error.value.code == cc.ERR_INVALID_LOCATION
    with pytest.raises(cc.CoordsException) as error:
        cc.may_reuse_location(fix(5), 2_000, "later")
    assert error.value.code == cc.ERR_INVALID_ARGUMENT


# ---- Bad input at every function ----------------------------------------------------------------

def test_null_pointers_everywhere():
    seed, public = cc.generate_identity()
    out32, out64, buffer, location = (c_uint8 * 32)(), (c_uint8 * 64)(), CoordsBuffer(), CoordsLocation()
    fix = CoordsLocation(1, 2, 3, 4, 5)
    calls = [
        (lib.coords_identity_generate, None, out32),
        (lib.coords_identity_generate, out32, None),
        (lib.coords_identity_public_from_seed, None, out32),
        (lib.coords_identity_public_from_seed, u8(seed), None),
        (lib.coords_sign, None, u8(b"x"), 1, out64),
        (lib.coords_sign, u8(seed), None, 1, out64),
        (lib.coords_sign, u8(seed), u8(b"x"), 1, None),
        (lib.coords_verify, None, u8(b"x"), 1, out64),
        (lib.coords_verify, u8(public), u8(b"x"), 1, None),
        (lib.coords_blob_seal, None, u8(public), 1, byref(buffer)),
        (lib.coords_blob_seal, byref(fix), None, 1, byref(buffer)),
        (lib.coords_blob_seal, byref(fix), u8(public), 1, None),
        (lib.coords_blob_open, None, u8(b"x" * 200), 200, byref(location)),
        (lib.coords_blob_open, u8(seed), None, 200, byref(location)),
        (lib.coords_blob_open, u8(seed), u8(b"x" * 200), 200, None),
        (lib.coords_prepare_upload, None, byref(fix), b"[]", b"https://x", byref(buffer)),
        (lib.coords_prepare_upload, u8(seed), None, b"[]", b"https://x", byref(buffer)),
        (lib.coords_prepare_upload, u8(seed), byref(fix), None, b"https://x", byref(buffer)),
        (lib.coords_prepare_upload, u8(seed), byref(fix), b"[]", None, byref(buffer)),
        (lib.coords_prepare_upload, u8(seed), byref(fix), b"[]", b"https://x", None),
        (lib.coords_prepare_fetch, None, byref(buffer)),
        (lib.coords_prepare_fetch, b"[]", None),
        (lib.coords_process_fetch_response, None, u8(b"{}"), 2, byref(buffer)),
        (lib.coords_process_fetch_response, u8(seed), None, 2, byref(buffer)),
        (lib.coords_process_fetch_response, u8(seed), u8(b"{}"), 2, None),
        (lib.coords_friend_link_generate, None, b"https://x", b"n", byref(buffer)),
        (lib.coords_friend_link_generate, u8(public), None, b"n", byref(buffer)),
        (lib.coords_friend_link_generate, u8(public), b"https://x", None, byref(buffer)),
        (lib.coords_friend_link_generate, u8(public), b"https://x", b"n", None),
        (lib.coords_friend_link_parse, None, byref(buffer)),
        (lib.coords_friend_link_parse, b"coord://x/add/y#z", None),
        (lib.coords_safety_number, None, u8(public), byref(buffer)),
        (lib.coords_safety_number, u8(public), u8(public), None),
        (lib.coords_may_reuse_fix, 1, 2, None, byref(c_bool())),
        (lib.coords_may_reuse_fix, 1, 2, b"launch", None),
        (lib.coords_app_open, None, b"{}", byref(cc._APP())),
        (lib.coords_app_open, b"/tmp/x", b"{}", None),
        (lib.coords_app_open_with_keychain, b"/tmp/x", b"{}", None, byref(cc._APP())),
    ]
    for function, *args in calls:
        code, _ = raw(function, *args)
        assert code == cc.ERR_NULL_ARGUMENT, (function.__name__, args)


def test_huge_sizes_are_refused_before_reading():
    seed, public = cc.generate_identity()
    buffer, location, out64 = CoordsBuffer(), CoordsLocation(), (c_uint8 * 64)()
    fix = CoordsLocation(1, 2, 3, 4, 5)
    small = u8(b"tiny")
    assert raw(lib.coords_sign, u8(seed), small, HUGE, out64)[0] == cc.ERR_TOO_LARGE
    assert raw(lib.coords_verify, u8(public), small, HUGE, out64)[0] == cc.ERR_TOO_LARGE
    assert raw(lib.coords_blob_open, u8(seed), small, HUGE, byref(location))[0] == cc.ERR_TOO_LARGE
    assert raw(lib.coords_blob_open, u8(seed), small, 65537, byref(location))[0] == cc.ERR_TOO_LARGE
    assert raw(lib.coords_process_fetch_response, u8(seed), small, HUGE, byref(buffer))[0] == cc.ERR_TOO_LARGE
    assert raw(lib.coords_blob_seal, byref(fix), small, HUGE, byref(buffer))[0] == cc.ERR_TOO_MANY_RECIPIENTS
    assert raw(lib.coords_blob_seal, byref(fix), small, 1051, byref(buffer))[0] == cc.ERR_TOO_MANY_RECIPIENTS
    long_string = b"x" * (1024 * 1024 + 1)
    assert raw(lib.coords_friend_link_parse, long_string, byref(buffer))[0] == cc.ERR_TOO_LARGE


def test_invalid_utf8_and_malformed_json():
    seed, public = cc.generate_identity()
    buffer = CoordsBuffer()
    fix = CoordsLocation(1, 2, 3, 4, 5)
    bad = b"\xff\xfe\xfd"
    assert raw(lib.coords_friend_link_parse, bad, byref(buffer))[0] == cc.ERR_INVALID_UTF8
    assert raw(lib.coords_friend_link_generate, u8(public), b"https://x", bad, byref(buffer))[0] == cc.ERR_INVALID_UTF8
    assert raw(lib.coords_prepare_fetch, bad, byref(buffer))[0] == cc.ERR_INVALID_UTF8
    assert raw(lib.coords_prepare_upload, u8(seed), byref(fix), b"[]", bad, byref(buffer))[0] == cc.ERR_INVALID_UTF8
    assert raw(lib.coords_may_reuse_fix, 1, 2, bad, byref(c_bool()))[0] == cc.ERR_INVALID_UTF8
    assert raw(lib.coords_app_open, bad, b"{}", byref(cc._APP()))[0] == cc.ERR_INVALID_UTF8
    for text in [b"", b"[", b"{\"a\":}", b"[1,]", b"[" * 10000]:
        assert raw(lib.coords_prepare_fetch, text, byref(buffer))[0] == cc.ERR_INVALID_JSON
    assert raw(lib.coords_prepare_fetch, b"{}", byref(buffer))[0] == cc.ERR_INVALID_ARGUMENT
    assert raw(lib.coords_process_fetch_response, u8(seed), u8(b"x"), 1, byref(buffer))[0] == cc.ERR_INVALID_JSON


def test_invalid_values():
    seed, public = cc.generate_identity()
    for location in [cc.Location(float("nan"), 0, timestamp_ms=1), cc.Location(0, float("inf"), timestamp_ms=1),
                     cc.Location(90.5, 0, timestamp_ms=1), cc.Location(0, -180.1, timestamp_ms=1)]:
        with pytest.raises(cc.CoordsException) as error:
            cc.seal(location, [public])
        assert error.value.code == cc.ERR_INVALID_LOCATION
    with pytest.raises(cc.CoordsException) as error:
        cc.friend_link(b"\xff" * 32, "https://x", "n")
    assert error.value.code == cc.ERR_INVALID_PUBLIC_KEY
    with pytest.raises(ValueError):
        cc.open_blob(seed[:31], b"x")
    with pytest.raises(ValueError):
        cc.seal(cc.Location(0, 0, timestamp_ms=1), [public[:16]])
    with pytest.raises(cc.CoordsException) as error:
        cc.prepare_upload(seed, cc.Location(0, 0, timestamp_ms=1), ["not an id"], "https://x")
    assert error.value.code == cc.ERR_INVALID_PUBLIC_KEY_ID
    with pytest.raises(cc.CoordsException) as error:
        cc.prepare_upload(seed, cc.Location(0, 0, timestamp_ms=1), [], "ftp://x")
    assert error.value.code == cc.ERR_INVALID_SERVER_URL


def test_random_blobs_never_crash():
    import random
    seed, public = cc.generate_identity()
    blob = bytearray(cc.seal(cc.Location(1, 2, timestamp_ms=3), [public]))
    rng = random.Random(7)
    for _ in range(500):
        mutated = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        mutated = mutated[: rng.randint(0, len(mutated) + 10)]
        try:
            assert cc.open_blob(seed, bytes(mutated)).latitude == 1
        except cc.CoordsException as error:
            assert 300 <= error.code < 400


# ---- Apps --------------------------------------------------------------------------------------

class ToyRelay:
    def __init__(self, stamp=True):
        self.blobs, self.stamp = {}, stamp

    def send(self, request):
        body = json.loads(cc.request_body(request))
        if request["method"] == "PUT":
            entry = {"blob": body["blob"], "updated": 1800000000}
            if self.stamp:
                entry.update(signature=body["signature"], timestamp=body["timestamp"])
            self.blobs[body["pubkey"]] = entry
            return b""
        return json.dumps({id: self.blobs.get(id) for id in body["ids"]}).encode()


def now_ms():
    return int(time.time() * 1000)


def test_two_apps_share_through_a_relay(tmp_path):
    relay = ToyRelay()
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as alice, cc.App(str(tmp_path / "b"), passphrase="b", **FAST) as bob:
        alice_id = alice.create_identity("Alice", "https://relay.test")
        bob.create_identity("Bob", "https://relay.test")
        assert alice.add_friend_link(bob.friend_link())["name"] == "Bob"
        assert bob.add_friend_link(alice.friend_link())["id"] == alice_id
        assert alice.safety_number(bob.public_key()) == bob.safety_number(alice.public_key())
        fix = cc.Location(48.8566, 2.3522, accuracy=5, timestamp_ms=now_ms())
        upload = alice.prepare_upload(fix)
        assert upload["recipient_count"] == 2
        relay.send(upload["request"])
        alice.mark_upload_succeeded(upload["fix_timestamp"])
        with pytest.raises(cc.CoordsException) as error:
            alice.prepare_upload(fix)
        assert error.value.code == cc.ERR_STALE_LOCATION
        outcome = {}
        for fetch in bob.prepare_fetches():
            outcome = bob.process_fetch_response(relay.send(fetch))
        assert outcome["updated"][0]["location"]["latitude"] == 48.8566
        assert outcome["updated"][0]["authenticity"] == "verified"
        assert bob.friend_locations()[0]["name"] == "Alice"
        kinds = [(u["manager"], u["type"]) for u in bob.updates()]
        assert ("location", "locations_updated") in kinds and ("friends", "friend_added") in kinds
        assert bob.next_update(10) is None
        delete = alice.prepare_delete()
        assert delete["method"] == "DELETE" and delete["url"] == "https://relay.test/api/location"


def test_strict_mode_and_tampering(tmp_path):
    relay = ToyRelay(stamp=False)
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as alice, cc.App(str(tmp_path / "b"), passphrase="b", **FAST) as bob:
        alice_id = alice.create_identity("Alice", "https://relay.test")
        bob.create_identity("Bob", "https://relay.test")
        bob.add_friend_link(alice.friend_link())
        alice.add_friend_link(bob.friend_link())
        bob.set_strict_mode(True)
        assert bob.info()["strict_mode"] is True
        upload = alice.prepare_upload(cc.Location(1, 1, timestamp_ms=now_ms()))
        relay.send(upload["request"])
        fetch = bob.prepare_fetches()[0]
        outcome = bob.process_fetch_response(relay.send(fetch))
        assert outcome["rejected"][0]["error"]["code"] == 343  # unverified entry in strict mode
        relay.blobs[alice_id]["signature"] = cc.b64url(bytes(64))
        relay.blobs[alice_id]["timestamp"] = 1
        outcome = bob.process_fetch_response(relay.send(fetch))
        assert outcome["rejected"][0]["error"]["code"] == 342  # tampered


def test_backup_restores_into_a_python_keychain(tmp_path):
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as alice:
        alice_id = alice.create_identity("Alice", "https://relay.test")
        alice.add_friend(cc.b64url(cc.generate_identity()[1]), "https://relay.test", "Zoë")
        backup = alice.export_backup("backup words")
    keychain = cc.Keychain()
    with cc.App(str(tmp_path / "restored"), keychain=keychain, **FAST) as restored:
        with pytest.raises(cc.CoordsException) as error:
            restored.import_backup(backup, "nope")
        assert error.value.code == cc.ERR_WRONG_BACKUP_PASSPHRASE
        assert restored.import_backup(backup, "backup words") == alice_id
        assert [f["name"] for f in restored.friends()] == ["Zoë"]
    assert len(keychain.entries["identity.ed25519.seed"]) == 32
    with cc.App(str(tmp_path / "restored"), keychain=keychain, **FAST) as again:
        assert again.info()["id"] == alice_id


def test_handles_and_lifecycle_errors(tmp_path):
    app = cc.App(str(tmp_path / "a"), passphrase="pw", **FAST)
    handle = app.handle
    with pytest.raises(cc.CoordsException) as error:
        cc.App(str(tmp_path / "a"), passphrase="pw", **FAST)
    assert error.value.code == cc.ERR_STORE_ALREADY_OPEN
    with pytest.raises(cc.CoordsException) as error:
        app.friend_link()
    assert error.value.code == cc.ERR_NO_IDENTITY
    app.close()
    assert raw(lib.coords_app_close, handle)[0] == cc.ERR_INVALID_HANDLE  # double close
    assert raw(lib.coords_friends_list, handle, byref(CoordsBuffer()))[0] == cc.ERR_INVALID_HANDLE
    assert raw(lib.coords_friends_list, 0xDEAD0, byref(CoordsBuffer()))[0] == cc.ERR_INVALID_HANDLE
    assert raw(lib.coords_app_close, None)[0] == 0
    with pytest.raises(cc.CoordsException) as error:
        cc.App(str(tmp_path / "a"), passphrase="wrong", **FAST)
    assert error.value.code == cc.ERR_WRONG_PASSPHRASE
    with pytest.raises(cc.CoordsException) as error:
        cc.App(str(tmp_path / "b"), **FAST)
    assert error.value.code == cc.ERR_INVALID_ARGUMENT


def test_update_callback(tmp_path):
    seen, lock = [], threading.Lock()

    def collect(update):
        with lock:
            seen.append(update["type"])

    with cc.App(str(tmp_path / "a"), passphrase="pw", **FAST) as app:
        app.set_update_callback(collect)
        app.create_identity("Cal", "https://relay.test")
        for _ in range(100):
            with lock:
                if len(seen) >= 2:
                    break
            time.sleep(0.01)
        app.set_update_callback(None)
    assert seen[:2] == ["identity_created", "profile_changed"]


def test_calls_from_many_threads(tmp_path):
    seed, public = cc.generate_identity()
    errors = []
    with cc.App(str(tmp_path / "a"), passphrase="pw", **FAST) as app:
        app.create_identity("T", "https://relay.test")

        def worker(index):
            try:
                for round in range(10):
                    friend_seed, friend = cc.generate_identity()
                    blob = cc.seal(cc.Location(index, round, timestamp_ms=round), [public, friend])
                    assert cc.open_blob(friend_seed, blob).latitude == index
                    app.add_friend(cc.b64url(friend), "https://relay.test", f"f{index}-{round}")
                    app.friends()
                    app.info()
            except Exception as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(app.friends()) == 80


# Every app-level function with its non-handle arguments (valid enough that only the handle or
# an output pointer can be what is wrong).
def _app_calls():
    seed, public = cc.generate_identity()
    buffer, out32, out64 = CoordsBuffer(), (c_uint8 * 32)(), (c_uint8 * 64)()
    fix = CoordsLocation(1, 2, 3, 4, 5)
    return [
        (lib.coords_app_next_update, [0], byref(buffer)),
        (lib.coords_wallet_create_identity, [b"n", b"https://x"], byref(buffer)),
        (lib.coords_wallet_import_seed, [u8(seed), b"n", b"https://x"], byref(buffer)),
        (lib.coords_wallet_set_profile, [b"n", None], None),
        (lib.coords_wallet_set_strict_mode, [True], None),
        (lib.coords_wallet_info, [], byref(buffer)),
        (lib.coords_wallet_public_key, [], out32),
        (lib.coords_wallet_friend_link, [], byref(buffer)),
        (lib.coords_wallet_safety_number, [u8(public)], byref(buffer)),
        (lib.coords_wallet_sign, [u8(b"m"), 1], out64),
        (lib.coords_wallet_export_backup, [b"pw"], byref(buffer)),
        (lib.coords_wallet_import_backup, [u8(b"x" * 100), 100, b"pw"], byref(buffer)),
        (lib.coords_friends_add_link, [b"coord://x/add/y#z"], byref(buffer)),
        (lib.coords_friends_add, [b"{}"], byref(buffer)),
        (lib.coords_friends_update, [cc.b64url(public).encode(), b"{}"], byref(buffer)),
        (lib.coords_friends_remove, [cc.b64url(public).encode()], None),
        (lib.coords_friends_list, [], byref(buffer)),
        (lib.coords_location_prepare_upload, [byref(fix)], byref(buffer)),
        (lib.coords_location_prepare_delete, [], byref(buffer)),
        (lib.coords_location_mark_upload_succeeded, [5], None),
        (lib.coords_location_mark_upload_failed, [5, b"offline"], None),
        (lib.coords_location_prepare_fetches, [], byref(buffer)),
        (lib.coords_location_process_fetch_response, [u8(b"{}"), 2], byref(buffer)),
        (lib.coords_location_friend_locations, [], byref(buffer)),
        (lib.coords_outbox_enqueue, [b"upload", b"{}", None], byref(ctypes.c_uint64())),
        (lib.coords_outbox_pending, [False], byref(buffer)),
        (lib.coords_outbox_mark_delivered, [1], None),
        (lib.coords_outbox_mark_failed, [1, b"x"], None),
        (lib.coords_outbox_remove, [1], None),
    ]


def test_every_app_function_refuses_null_stale_and_forged_handles(tmp_path):
    app = cc.App(str(tmp_path / "a"), passphrase="pw", **FAST)
    stale = app.handle
    app.close()
    for function, args, out in _app_calls():
        tail = [out] if out is not None else []
        assert raw(function, None, *args, *tail)[0] == cc.ERR_NULL_ARGUMENT, function.__name__
        assert raw(function, stale, *args, *tail)[0] == cc.ERR_INVALID_HANDLE, function.__name__
        assert raw(function, 0x7777777A, *args, *tail)[0] == cc.ERR_INVALID_HANDLE, function.__name__
    assert raw(lib.coords_app_set_update_callback, stale, cc.UPDATE_CALLBACK(), None)[0] == cc.ERR_INVALID_HANDLE


def test_every_app_function_refuses_null_outputs(tmp_path):
    with cc.App(str(tmp_path / "a"), passphrase="pw", **FAST) as app:
        app.create_identity("N", "https://relay.test")
        for function, args, out in _app_calls():
            if out is None:
                continue
            assert raw(function, app.handle, *args, None)[0] == cc.ERR_NULL_ARGUMENT, function.__name__
        # The app still works after all of that.
        assert app.info()["name"] == "N"


def test_outbox_keeps_requests_until_delivered(tmp_path):
    seed, _ = cc.generate_identity()
    request = cc.prepare_upload(seed, cc.Location(1, 2, timestamp_ms=3), [], "https://relay.test")
    with cc.App(str(tmp_path / "a"), passphrase="pw", **FAST) as app:
        first = app.enqueue("upload", request, reference="3")
        second = app.enqueue("delete", request)
        assert [e["id"] for e in app.outbox(due_only=True)] == [first, second]
        app.mark_failed(first, "relay down")
        assert [e["id"] for e in app.outbox(due_only=True)] == [second]
    with cc.App(str(tmp_path / "a"), passphrase="pw", **FAST) as app:  # survives a restart
        entries = {e["id"]: e for e in app.outbox()}
        assert entries[first]["attempts"] == 1 and entries[first]["last_error"] == "relay down"
        assert entries[first]["request"] == request and entries[first]["reference"] == "3"
        app.mark_delivered(first)
        app.remove_queued(second)
        assert app.outbox() == []


GEO_ANSWERS = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "geocoding-15000.json")
BUNDLED_PLACES = os.path.join(ROOT, "Sources", "CGeoData", "places15000.cgeo")


def test_nearest_place_matches_independent_answers():
    with open(GEO_ANSWERS) as f:
        answers = json.load(f)["answers"]
    for answer in answers[:100]:
        place = cc.nearest_place(answer["latitude"], answer["longitude"])
        assert (place.name, place.country_code or "") == (answer["name"], answer["country_code"]), answer
        assert abs(place.distance_km - answer["distance_km"]) < 0.01


def test_nearest_place_display_phrase_and_errors():
    austin = cc.nearest_place(30.2672, -97.7431)
    assert austin.display == "Austin, Texas" and austin.state == "Texas" and austin.phrase == "in Austin, Texas"
    assert cc.nearest_place(30.2672, -97.7431, accuracy_m=25_000).phrase == "near Austin, Texas"
    for lat, lon in [(float("nan"), 0), (0, float("inf")), (90.5, 0), (0, -180.01)]:
        with pytest.raises(cc.CoordsException) as caught:
            cc.nearest_place(lat, lon)
        assert caught.value.code == cc.ERR_INVALID_COORDINATE
    with pytest.raises(cc.CoordsException) as caught:
        cc.nearest_place(0, 0, accuracy_m=-1)
    assert caught.value.code == cc.ERR_INVALID_ARGUMENT


def test_place_files(tmp_path):
    with cc.Places(BUNDLED_PLACES) as places:
        assert len(places) > 30_000
        assert places.nearest(38.7223, -9.1393).display == "Lisbon, Portugal"
        assert places.nearest(-33.87, 151.21) == cc.nearest_place(-33.87, 151.21)
    with pytest.raises(cc.CoordsException) as caught:
        places.nearest(0, 0)
    assert caught.value.code == cc.ERR_INVALID_HANDLE
    with pytest.raises(cc.CoordsException) as caught:
        cc.Places(str(tmp_path / "missing.cgeo"))
    assert caught.value.code == cc.ERR_UNREADABLE_PLACE_FILE
    damaged = tmp_path / "damaged.cgeo"
    data = bytearray(open(BUNDLED_PLACES, "rb").read())
    data[len(data) // 2] ^= 1
    damaged.write_bytes(bytes(data))
    with pytest.raises(cc.CoordsException) as caught:
        cc.Places(str(damaged))
    assert caught.value.code == cc.ERR_DAMAGED_PLACE_DATA
    assert lib.coords_places_close(None, None) == cc.OK


def test_closed_handles_refuse_work_and_close_twice(tmp_path):
    places = cc.Places(BUNDLED_PLACES)
    app = cc.App(str(tmp_path / "a"), passphrase="a", **FAST)
    assert app.info() is not None
    for handle, what in ((places, "place file"), (app, "app")):
        handle.close()
        handle.close()  # idempotent
        with pytest.raises(cc.ArgumentError) as caught:
            handle.handle
        assert caught.value.code == cc.ERR_INVALID_HANDLE and f"the {what} is closed" in str(caught.value)
    with pytest.raises(cc.ArgumentError):
        len(places)
    with pytest.raises(cc.ArgumentError):
        app.info()


ENVELOPES = os.path.join(ROOT, "Tests", "CoordsCoreTests", "Vectors", "envelope-v2.json")


def test_vector_envelopes_open_and_rejects_are_refused():
    with open(ENVELOPES) as f:
        v = json.load(f)
    seeds = [bytes.fromhex(k["seed"]) for k in v["keys"]]
    publics = [bytes.fromhex(k["ed25519_public"]) for k in v["keys"]]
    created = 1795341600  # 2026-11-22T10:00:00Z
    for e in v["envelopes"]:
        plaintext = cc.open_envelope(seeds[e["recipient"]], publics[e["sender"]], e["envelope"], created + 60)
        assert plaintext.decode() == e["plaintext_utf8"]
    for r in v["rejects"]:
        with pytest.raises(cc.CoordsException) as caught:
            cc.open_envelope(seeds[r["reader"]], publics[0], r["envelope"], created + 60)
        assert caught.value.code in (cc.ERR_ENVELOPE_SIGNATURE, cc.ERR_ENVELOPE_TAMPERED, cc.ERR_ENVELOPE_NOT_FOR_ME, cc.ERR_INVALID_ENVELOPE)
    e = v["envelopes"][0]
    with pytest.raises(cc.CoordsException) as caught:
        cc.open_envelope(seeds[e["recipient"]], publics[e["sender"]], e["envelope"], created + 2 * 86400)
    assert caught.value.code == cc.ERR_ENVELOPE_EXPIRED


def test_envelope_round_trip():
    alice_seed, alice = cc.generate_identity()
    bob_seed, bob = cc.generate_identity()
    payload = json.dumps({"kind": "text", "id": "00000000-0000-4000-8000-000000000009", "text": "hi", "sentAt": 1}).encode()
    envelope = cc.seal_envelope(alice_seed, bob, payload, 1_800_000_000, 3600)
    assert envelope["protocolVersion"] == 2 and envelope["createdAt"] == "2027-01-15T08:00:00Z"
    assert cc.open_envelope(bob_seed, alice, envelope, 1_800_000_001) == payload
    with pytest.raises(cc.CoordsException) as caught:
        cc.open_envelope(alice_seed, alice, envelope, 1_800_000_001)
    assert caught.value.code == cc.ERR_ENVELOPE_NOT_FOR_ME


@contextlib.contextmanager
def friends(tmp_path):
    """Alice and Bob, apps in `tmp_path`, friends both ways on https://relay.example."""
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as alice, cc.App(str(tmp_path / "b"), passphrase="b", **FAST) as bob:
        alice_id = alice.create_identity("Alice", "https://relay.example")
        bob_id = bob.create_identity("Bob", "https://relay.example")
        alice.add_friend(bob_id, "https://relay.example", "Bob")
        bob.add_friend(alice_id, "https://relay.example", "Alice")
        yield alice, alice_id, bob, bob_id


def test_two_apps_exchange_messages(tmp_path):
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        sent = alice.send_message(bob_id, "on my way")
        assert sent["request"]["url"] == "https://relay.example/v1/relay/messages" and sent["message"]["status"] == "queued"
        alice.mark_message_sent(sent["message"]["id"])
        packets = json.dumps({"packets": [json.loads(cc.request_body(sent["request"]))]}).encode()
        outcome = bob.process_messages(packets)
        assert [m["text"] for m in outcome["received"]] == ["on my way"]
        assert len(outcome["acks"]) == 1 and len(outcome["receipts"]) == 1
        assert bob.process_messages(packets)["duplicates"] == [sent["message"]["id"]]
        receipt = json.dumps({"packets": [json.loads(cc.request_body(outcome["receipts"][0]["request"]))]}).encode()
        assert alice.process_messages(receipt)["delivered"] == [sent["message"]["id"]]
        assert [m["status"] for m in alice.history(bob_id)] == ["delivered"]
        assert [c["name"] for c in bob.conversations()] == ["Alice"]
        fetch = bob.prepare_message_fetch()
        assert fetch["method"] == "GET" and "X-Coords-Signature" in fetch["headers"]
        bob.set_disappearing(alice_id, 60)
        assert bob.sweep_expired_messages() == []
        with pytest.raises(cc.CoordsException) as caught:
            bob.process_messages(b"[]")
        assert caught.value.code == cc.ERR_INVALID_MAILBOX_RESPONSE
        with pytest.raises(cc.CoordsException) as caught:
            alice.send_message(cc.b64url(cc.generate_identity()[1]), "stranger")
        assert caught.value.code == cc.ERR_FRIEND_NOT_FOUND


def test_mute_quiet_hours_and_receipts_decide_what_notifies(tmp_path):
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        def deliver(text):
            sent = alice.send_message(bob_id, text)
            return bob.process_messages(json.dumps({"packets": [json.loads(cc.request_body(sent["request"]))]}).encode())

        assert [m["notify"] for m in deliver("one")["received"]] == [True]
        bob.mute(alice_id)
        assert bob.muted_until(alice_id) == cc.MUTED_FOREVER
        assert [m["notify"] for m in deliver("two")["received"]] == [False]
        bob.unmute(alice_id)
        assert bob.muted_until(alice_id) is None
        bob.mute(alice_id, until_ms=1)  # a mute that ended long ago
        assert bob.muted_until(alice_id) is None
        assert [m.notify for m in bob.history(alice_id)] == [True, False]
        assert all(m.notify is None for m in alice.history(bob_id))
        # Quiet hours around the clock's current minute, in UTC.
        now = time.gmtime()
        start = now.tm_hour * 60 + now.tm_min
        window = f"{start // 60:02d}:{start % 60:02d}-{((start + 120) % 1440) // 60:02d}:{(start + 120) % 60:02d}"
        bob.set_quiet_hours(window, utc_offset_minutes=0)
        assert bob.notification_policy()["quiet_hours"]["text"] == window
        assert [m["notify"] for m in deliver("three")["received"]] == [False]
        bob.set_quiet_hours(None)
        assert bob.notification_policy() == {"quiet_hours": None, "delivery_receipts": True}
        bob.set_delivery_receipts(False)
        outcome = deliver("four")
        assert outcome["receipts"] == [] and [m["notify"] for m in outcome["received"]] == [True]
        assert bob.notification_policy()["delivery_receipts"] is False
        for bad in ["22:00", "25:00-07:00", "07:00-07:00", "", "x" * 100]:
            with pytest.raises(cc.ManagerError) as caught:
                bob.set_quiet_hours(bad)
            assert caught.value.code == cc.ERR_INVALID_QUIET_HOURS
        with pytest.raises(cc.ManagerError) as caught:
            bob.set_quiet_hours("22:00-07:00", utc_offset_minutes=900)
        assert caught.value.code == cc.ERR_INVALID_QUIET_HOURS
        for unknown in ["", "nobody", cc.b64url(cc.generate_identity()[1])]:
            with pytest.raises(cc.ManagerError) as caught:
                bob.mute(unknown)
            assert caught.value.code == cc.ERR_UNKNOWN_CONVERSATION
        for bad_time in [0, -1, 2**64, 1.5]:
            with pytest.raises(ValueError):
                bob.mute(alice_id, until_ms=bad_time)


def test_three_apps_share_a_group_through_their_mailboxes(tmp_path):
    names = ["alice", "bob", "carol"]
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as a, cc.App(str(tmp_path / "b"), passphrase="b", **FAST) as b, \
            cc.App(str(tmp_path / "c"), passphrase="c", **FAST) as c:
        apps = dict(zip(names, [a, b, c]))
        ids = {name: app.create_identity(name.capitalize(), "https://relay.example") for name, app in apps.items()}
        for x in names:
            for y in names:
                if x != y:
                    apps[x].add_friend(ids[y], "https://relay.example", y.capitalize())
        peer = {name: hashlib.sha256(base64.urlsafe_b64decode(ids[name] + "==")).hexdigest() for name in names}
        mailboxes: dict[str, list] = {name: [] for name in names}

        def settle():
            for _ in range(4):
                for name, app in apps.items():
                    for entry in app.outbox_due():
                        if entry.kind not in ("message", "group-message"):
                            continue
                        envelope = json.loads(cc.request_body(entry.request))
                        mailboxes[next(n for n in names if peer[n] == envelope["recipientID"])].append(envelope)
                        app.outbox_report(entry.id, 202, b"")
                for name, app in apps.items():
                    if mailboxes[name]:
                        outcome = app.process_messages(json.dumps({"packets": mailboxes[name]}).encode())
                        assert outcome.rejected == [], outcome.rejected
                        mailboxes[name] = [e for e in mailboxes[name] if e["id"] in outcome.waiting]

        change = a.create_group("Trip", [ids["bob"], ids["carol"]])
        assert change.group.is_admin and len(change.group.members) == 3 and change.unreachable == []
        settle()
        assert [g.name for g in b.groups()] == ["Trip"] and not b.groups()[0].is_admin
        sent = a.send_group_message("Trip", "at the station")
        assert sent.message.group == change.group.id and len(sent.queued) == 2
        settle()
        assert [m.text for m in c.group_history("Trip")] == ["at the station"]
        assert c.group_history("Trip")[0].friend_id == ids["alice"]
        a.remove_from_group("Trip", [ids["carol"]])
        settle()
        assert c.groups()[0].status == "removed"
        b.send_group_message("Trip", "just us")
        settle()
        assert [m.text for m in a.group_history("Trip")] == ["at the station", "just us"]
        assert [m.text for m in c.group_history("Trip")] == ["at the station"]
        with pytest.raises(cc.CoordsException) as caught:
            b.add_to_group("Trip", [ids["carol"]])
        assert caught.value.code == cc.ERR_NOT_A_GROUP_ADMIN
        with pytest.raises(cc.CoordsException) as caught:
            a.create_group("x" * 65, [ids["bob"]])
        assert caught.value.code == cc.ERR_MALFORMED_GROUP_STATEMENT
        assert a.set_group_sharing("Trip", True) is None  # nothing shared yet: no reseal
        assert a.groups()[0].sharing
        c.delete_group("Trip")
        assert c.groups() == []


def test_out_of_range_keychain_cost_is_an_invalid_argument(tmp_path):
    # Used to report 651 "keychain file is damaged" for a directory that had no keychain yet.
    for cost in ({"ops_limit": 0, "mem_limit": 65536}, {"ops_limit": 2, "mem_limit": 1},
                 {"ops_limit": 1 << 40, "mem_limit": 65536}, {"ops_limit": 2, "mem_limit": 1 << 62}):
        directory = tmp_path / f"app-{cost['ops_limit']}-{cost['mem_limit']}"
        with pytest.raises(cc.CoordsException) as error:
            cc.App(str(directory), passphrase="pw", keychain_cost=cost)
        assert error.value.code == cc.ERR_INVALID_ARGUMENT, error.value
        assert "Argon2id" in str(error.value)
        assert not (directory / "keychain.bin").exists()


def test_exception_hierarchy_and_version():
    # Each layer's codes raise that layer's class; bad input is also a ValueError, as in PyNaCl.
    with pytest.raises(cc.WireError) as caught:
        cc.parse_friend_link("https://not-a-link")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, cc.CoordsError)
    assert caught.value.code == cc.ERR_INVALID_FRIEND_LINK
    with pytest.raises(cc.GeocodingError):
        cc.nearest_place(91, 0)
    with pytest.raises(cc.ArgumentError):
        cc.may_reuse_fix(1, 2, "later")
    seed, public = cc.generate_identity()
    with pytest.raises(cc.WireError) as caught:
        cc.open_blob(seed, cc.seal(cc.Location(1, 2, timestamp_ms=3), [cc.generate_identity()[1]]))
    assert caught.value.code == cc.ERR_NOT_A_RECIPIENT
    assert cc.CoordsError.from_code(205, "x").__class__ is cc.CryptoError
    assert cc.CoordsError.from_code(401, "x").__class__ is cc.StoreError
    assert cc.CoordsError.from_code(650, "x").__class__ is cc.ManagerError
    assert cc.CoordsError.from_code(9999, "x").__class__ is cc.CoordsError
    assert cc.CoordsException is cc.CoordsError
    # One version everywhere.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    version = open(os.path.join(root, "VERSION")).read().strip()
    assert cc.__version__ == version == cc.version()


def test_typed_records():
    place = cc.nearest_place(38.7223, -9.1393)
    assert isinstance(place, cc.Place) and place.display == "Lisbon, Portugal" and place.phrase == "in Lisbon, Portugal"
    link = cc.parse_friend_link(cc.friend_link(cc.generate_identity()[1], "https://relay.example", "Bob"))
    assert isinstance(link, cc.FriendLink) and link.server == "https://relay.example" and link.name == "Bob"


def test_app_methods_return_typed_records(tmp_path):
    with cc.App(str(tmp_path / "alice"), passphrase="pw", **FAST) as alice:
        assert isinstance(alice.info(), cc.WalletInfo) and not alice.info().has_identity
        alice.create_identity("Alice", "https://relay.example")
        info = alice.info()
        assert info.has_identity and info.name == "Alice" and info.link.startswith("coord://")
        bob_seed, bob = cc.generate_identity()
        friend = alice.add_friend_link(cc.friend_link(bob, "https://relay.example", "Bob"))
        assert isinstance(friend, cc.Friend) and friend.name == "Bob" and friend.trust == "unverified"
        assert alice.friends() == [friend]
        upload = alice.prepare_upload(cc.Location(47.37, 8.54, timestamp_ms=int(time.time() * 1000)))
        assert isinstance(upload, cc.Upload) and isinstance(upload.request, cc.Request)
        assert upload.request.method == "PUT" and json.loads(upload.request.body)["pubkey"] == cc.b64url(alice.public_key())
        assert upload.recipient_count == 2
        fetches = alice.prepare_fetches()
        assert [type(f) for f in fetches] == [cc.Request] and fetches[0].ids == [friend.id]
        outcome = alice.process_fetch_response(json.dumps({friend.id: None}).encode())
        assert isinstance(outcome, cc.FetchOutcome)
        assert all(isinstance(x, cc.FriendLocation) for x in alice.friend_locations())
        queued = alice.enqueue("upload", upload.request, reference=str(upload.fix_timestamp))
        entries = alice.outbox()
        assert [e.id for e in entries] == [queued] and isinstance(entries[0], cc.OutboxEntry)
        assert entries[0].request == upload.request
        sent = alice.send_message(friend.id, "hi")
        assert isinstance(sent, cc.Sent) and isinstance(sent.message, cc.Message) and sent.message.text == "hi"
        assert [m.text for m in alice.history(friend.id)] == ["hi"]
        assert isinstance(alice.conversations()[0], cc.Conversation)
        assert isinstance(alice.prepare_message_fetch(), cc.Request)
        push = alice.prepare_push_register("https://push.example.net/up/AbC", ttl_seconds=86400)
        assert push.method == "PUT" and push.url.endswith("/v1/relay/push")
        assert json.loads(push.body) == {"endpoint": "https://push.example.net/up/AbC", "ttl": 86400}
        assert "endpoint" in json.loads(alice.prepare_push_register("https://push.example.net/up/x").body)
        with pytest.raises(cc.CoordsError) as refused:
            alice.prepare_push_register("http://push.example.net/up")
        assert refused.value.code == cc.ERR_INVALID_PUSH_ENDPOINT
        with pytest.raises(ValueError):
            alice.prepare_push_register("https://push.example.net/up", ttl_seconds=-1)
        assert alice.prepare_push_unregister().method == "DELETE"
        assert upload.to_json()["request"]["method"] == "PUT" and upload["fix_timestamp"] == upload.fix_timestamp


def test_hostile_disappearing_time_never_traps(tmp_path):
    # A disappearing time of 2^64-1 seconds used to overflow (seconds × 1000) when the next
    # message was stored, killing the host process.
    with cc.App(str(tmp_path / "alice"), passphrase="pw", **FAST) as alice:
        alice.create_identity("Alice", "https://relay.example")
        friend = alice.add_friend_link(cc.friend_link(cc.generate_identity()[1], "https://relay.example", "Bob"))
        alice.set_disappearing(friend.id, 2**64 - 1)
        sent = alice.send_message(friend.id, "still here")
        assert sent.message.disappears_at == 2**64 - 1
        assert [m.text for m in alice.history(friend.id)] == ["still here"]


def test_live_channel_prepares_subscribes_and_processes_notices_like_fetch_entries(tmp_path):
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        [connection] = bob.live_connections()
        assert connection.url == "wss://relay.example/v1/relay/live" and connection.ids == [alice_id] and connection.mailbox
        opened = bob.live_opened("https://relay.example")
        first = json.loads(opened.frames[0])
        assert first["type"] == "subscribe" and first["ids"] == [alice_id] and first["mailbox"]["key"] == bob_id
        assert [r.ids for r in opened.catch_up] == [[alice_id]] and opened.mailbox_fetch.method == "GET"

        # Alice's upload, as the relay pushes it: processed like a fetch entry.
        upload = json.loads(cc.request_body(alice.prepare_upload(cc.Location(47.3769, 8.5417, timestamp_ms=int(time.time() * 1000))).request))
        notice = {"type": "location", "id": alice_id, "blob": upload["blob"], "updated": upload["timestamp"],
                  "timestamp": upload["timestamp"], "signature": upload["signature"]}
        event = bob.live_process("https://relay.example", json.dumps(notice))
        assert event.type == "locations" and [f.id for f in event.outcome.updated] == [alice_id]
        assert event.outcome.updated[0].location.latitude == 47.3769
        # The same notice again changes nothing; a forged one is refused like a forged fetch entry.
        assert bob.live_process("https://relay.example", json.dumps(notice)).outcome.unchanged == [alice_id]
        forged = dict(notice, signature=cc.b64url(bytes(64)))
        assert [r.error.code for r in bob.live_process("https://relay.example", json.dumps(forged)).outcome.rejected] == [cc.ERR_TAMPERED_ENTRY]
        waiting = bob.live_process("https://relay.example", b'{"type":"message","id":"m1"}')
        assert waiting.type == "message_waiting" and waiting.fetch.method == "GET"
        # Issue 37: more notices while that fetch is out cost nothing but one more fetch after it.
        for i in range(50):
            assert bob.live_process("https://relay.example", json.dumps({"type": "message", "id": f"n{i}"})).type == "ignored"
        again = bob.live_mailbox_fetched("https://relay.example")
        assert again.method == "GET" and again.max_response_bytes == 17_681_200
        assert bob.live_mailbox_fetched("https://relay.example") is None
        # A position too large for a notice arrives as "changed": fetch that one friend.
        changed = bob.live_process("https://relay.example", json.dumps({"type": "changed", "id": alice_id}))
        assert changed.type == "changed" and changed.fetch.ids == [alice_id] and changed.fetch.max_response_bytes == 4_394_800
        assert bob.live_process("https://relay.example", json.dumps({"type": "changed", "id": bob_id})).type == "ignored"
        assert bob.live_process("https://other.example", json.dumps(notice)).type == "ignored"
        assert bob.live_process("https://relay.example", '{"type":"subscribed","ids":1,"mailbox":true}').to_json() == \
            {"type": "subscribed", "ids": 1, "mailbox": True}
        with pytest.raises(cc.CoordsException) as caught:
            bob.live_process("https://relay.example", b"not json")
        assert caught.value.code == cc.ERR_INVALID_JSON
        with pytest.raises(cc.CoordsException) as caught:
            bob.live_process("https://relay.example", b" " * 20_000)
        assert caught.value.code == cc.ERR_TOO_LARGE

        # While the relay confirms the subscriptions, the loop leaves the watched friend and the
        # mailbox to the connection; a connection the host stops brings both back.
        later = int(time.time() * 1000) + 3_600_000
        assert not {r.purpose for r in bob.due(later)} & {"fetch", "mailbox"}
        bob.live_stopped("https://relay.example")
        assert {"fetch", "mailbox"} <= {r.purpose for r in bob.due(later + 61_000)}
        bob.live_stopped("https://nowhere.example")  # no connection there: nothing to do
        with pytest.raises(TypeError):
            bob.live_stopped(7)  # type: ignore[arg-type]

        delay = bob.live_closed("https://relay.example", close_code=1006)
        assert 500 <= delay <= 1000
        assert bob.live_closed("https://relay.example", upgrade_status=404) is None
        assert bob.live_connections() == []  # polled from now on


def test_a_share_that_ends_is_resealed_without_that_friend(tmp_path):
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        now_ms = int(time.time() * 1000)
        assert alice.prepare_reseal() is None and alice.next_share_expiry() is None
        until = now_ms + 3_600_000
        shared = alice.share_with(bob_id, until_ms=until)
        assert isinstance(shared, cc.Friend) and shared.sharing == "until" and shared.share_until == until
        assert alice.next_share_expiry() == until
        upload = alice.prepare_upload(cc.Location(52.52, 13.405, 34.0, 8.0, now_ms))
        assert upload.recipient_count == 2 and alice.prepare_reseal() is None
        paused = alice.pause(bob_id)
        assert paused.sharing == "paused" and not paused.share_with
        assert [f.sharing for f in alice.friends()] == ["paused"]
        reseal = alice.prepare_reseal()
        assert isinstance(reseal, cc.Upload) and reseal.recipient_count == 1 and reseal.fix_timestamp == now_ms
        assert alice.share_with(bob_id).sharing == "on" and alice.next_share_expiry() is None
        assert alice.prepare_reseal() is None and alice.prepare_reseal(force=True).recipient_count == 2
        with pytest.raises(ValueError):
            alice.share_with(bob_id, until_ms=-1)
        with pytest.raises(cc.CoordsError) as missing:
            alice.pause("A" * 43)
        assert missing.value.code in (cc.ERR_FRIEND_NOT_FOUND, cc.ERR_INVALID_PUBLIC_KEY_ID)


def test_a_rotation_moves_the_friend_and_a_second_different_one_is_a_conflict(tmp_path):
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        bob.share_with(alice_id, until_ms=int(time.time() * 1000) + 3_600_000)
        rotation = alice.rotate(server="https://relay2.example")
        new_id = rotation["id"]
        assert new_id != alice_id and alice.previous_identities() == [alice_id]
        assert rotation["statement"]["old"] == alice_id and rotation["statement"]["new"] == new_id
        assert [e.kind for e in rotation["statements"]] == ["rotation"] and rotation["delete_previous"].method == "DELETE"
        packets = json.dumps({"packets": [json.loads(cc.request_body(rotation["statements"][0].request))]}).encode()
        outcome = bob.process_messages(packets)
        assert outcome.rotated == [alice_id] and outcome.rejected == []
        moved = [f for f in bob.friends() if f.id == new_id]
        assert len(moved) == 1 and moved[0].name == "Alice" and moved[0].server == "https://relay2.example"
        assert moved[0].sharing == "until" and alice_id not in [f.id for f in bob.friends()]
        with pytest.raises(cc.CoordsError) as not_in_conflict:
            bob.resolve_conflict(new_id, new_id)
        assert not_in_conflict.value.code == cc.ERR_NOT_IN_CONFLICT
        assert alice.queue_rotation_statements()[0].kind == "rotation"


def test_uploads_follow_friend_changes_made_by_another_process(tmp_path):
    """An upload keeps the friends it seals for between calls (per change stamp of the friends
    table); a change written by another process on the same directory must still count at once."""
    import subprocess
    import sys
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        start = now_ms()
        assert alice.prepare_upload(cc.Location(52.52, 13.405, timestamp_ms=start)).recipient_count == 2
        script = f"""
import coordscore as cc
with cc.App({str(tmp_path / "a")!r}, passphrase="a", keychain_cost="minimum", backup_cost="minimum", durability="no_sync") as app:
    app.pause({bob_id!r})
"""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(cc.__file__))] + sys.path))
        subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
        assert alice.prepare_upload(cc.Location(52.52, 13.405, timestamp_ms=start + 1)).recipient_count == 1
        script = script.replace(f"app.pause({bob_id!r})", f"app.share_with({bob_id!r})")
        subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
        assert alice.prepare_upload(cc.Location(52.52, 13.405, timestamp_ms=start + 2)).recipient_count == 2


def test_a_python_host_is_bounded_by_what_a_hostile_relay_answers(tmp_path):
    """Issue 37: the core, not the host, refuses what a hostile mailbox answer would make it sign,
    and tells every host how much of each answer to read (PROTOCOL.md §4.1)."""
    with friends(tmp_path) as (alice, alice_id, bob, bob_id):
        fetch = bob.prepare_message_fetch()
        assert fetch.max_response_bytes == 17_681_200
        assert [r.max_response_bytes for r in bob.prepare_fetches()] == [4_394_800]
        packet_id = "0f7c1b52-8a3e-4d6f-9b0a-1c2d3e4f5a6b"
        repeated = bob.process_messages(json.dumps({"packets": [{"id": packet_id}] * 100}).encode())
        assert [a.url.rsplit("/", 2)[1] for a in repeated.acks] == [packet_id]
        with pytest.raises(cc.CoordsException) as caught:
            bob.process_messages(json.dumps({"packets": [{"id": packet_id}] * 20_000}).encode())
        assert caught.value.code == cc.ERR_INVALID_MAILBOX_RESPONSE
        # Signed timestamps stay within 120 s of the clock however many acks were signed.
        many = [{"id": f"0f7c1b52-8a3e-4d6f-9b0a-{i:012x}"} for i in range(100)]
        stamps = []
        for _ in range(3):
            outcome = bob.process_messages(json.dumps({"packets": many}).encode())
            stamps += [int(a.headers["X-Coords-Timestamp"]) for a in outcome.acks]
        assert len(stamps) == 300 and max(stamps) <= time.time() + 121


def test_the_store_is_sealed_under_a_key_the_host_keychain_keeps(tmp_path):
    keychain = cc.Keychain()
    directory = str(tmp_path / "sealed")
    with cc.App(directory, keychain=keychain, **FAST) as app:
        me = app.create_identity("Marker Person", "https://relay-secret.test")
        friend = cc.b64url(cc.generate_identity()[1])
        app.add_friend(friend, "https://relay-secret.test", "Zoë Marker")
        assert app.next_message_expiry() is None
        app.set_disappearing(friend, 60)
        old = keychain.entries["store.dek"]
        assert len(old) == 32
        app.rekey()
        assert keychain.entries["store.dek"] != old and "store.dek.next" not in keychain.entries
        assert [f["name"] for f in app.friends()] == ["Zoë Marker"]
    data = open(os.path.join(directory, "store", "data.mdb"), "rb").read()
    for secret in ("Marker Person", "Zoë Marker", "relay-secret", me, friend):
        assert secret.encode() not in data
    # Without its key the store is refused, and nothing is written.
    del keychain.entries["store.dek"]
    with pytest.raises(cc.StoreError) as caught:
        cc.App(directory, keychain=keychain, **FAST)
    assert caught.value.code == cc.ERR_STORE_KEY_MISSING
    assert "store.dek" not in keychain.entries
    assert open(os.path.join(directory, "store", "data.mdb"), "rb").read() == data


def test_the_c_pull_api_hands_out_the_loops_requests_one_at_a_time(tmp_path):
    # coords_app_due_next: the loop for C hosts that parse no JSON (examples/host-loop.c).
    with cc.App(str(tmp_path / "a"), passphrase="a", **FAST) as app:
        app.create_identity("Alice", "http://127.0.0.1:9")
        seen = []
        while True:
            request = cc.CoordsHostRequest()
            error = cc.CoordsErrorStruct()
            assert lib.coords_app_due_next(app.handle, 0, byref(request), byref(error)) == 0
            if request.id == 0:
                assert not request.url.data
                break
            purpose = bytes(request.purpose.data[:request.purpose.len]).decode()
            url = bytes(request.url.data[:request.url.len]).decode()
            assert url.startswith("http://127.0.0.1:9/") and request.max_response_bytes > 0
            seen.append(purpose)
            lib.coords_host_request_free(byref(request))
            assert request.id == 0 and not request.url.data and request.url.len == 0
        assert set(seen) >= {"mailbox", "prekeys"}
        assert len(seen) == len(set(seen))  # each once: handed out until reported
        lib.coords_host_request_free(None)
        error = cc.CoordsErrorStruct()
        assert lib.coords_app_due_next(app.handle, 0, None, byref(error)) == cc.ERR_NULL_ARGUMENT
        lib.coords_error_free(byref(error))
