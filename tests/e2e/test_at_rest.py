"""End to end: what the `coords` CLI leaves on disk (issue 39, docs/STORE.md).

A home that shared, fetched and chatted through a live relay holds none of the friend's name,
id, position or any message text in any file; `coords watch` deletes a disappearing message on
time; `coords rekey` keeps everything readable.
"""
import base64
import os
import struct

import pytest

from e2e_support import Relay, alice_and_bob, coords, data, passphrase_env


@pytest.fixture
def world(tmp_path):
    with Relay(str(tmp_path / "relay")) as relay:
        yield relay.url, tmp_path, passphrase_env()


def encodings(value):
    """`value` (text or bytes) raw, in hex either case, and in base64 (standard and URL-safe,
    without the characters that depend on the neighbours in a longer encoding)."""
    raw = value.encode() if isinstance(value, str) else value
    out = [raw, raw.hex().encode(), raw.hex().upper().encode()]
    for b64 in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        out.append(b64.rstrip(b"=")[:-2])
    if isinstance(value, str):
        out.append(value.encode("utf-16-le"))
    return [needle for needle in out if len(needle) >= 4]


def number_encodings(number):
    fixed = round(number * 10_000_000)
    return [repr(number).encode(), f"{number:.4f}".encode(), struct.pack("<d", number), struct.pack(">d", number),
            struct.pack(">i", fixed), struct.pack("<i", fixed)]


def files_under(home, skip=()):
    for directory, _, names in os.walk(home):
        for name in names:
            if name not in skip:
                path = os.path.join(directory, name)
                with open(path, "rb") as handle:
                    yield path, handle.read()


def hits(home, needles, skip=()):
    return [f"{label} in {os.path.relpath(path, home)}" for path, content in files_under(home, skip)
            for label, needle in needles if needle in content]


def test_a_home_holds_no_friend_position_or_message_in_any_file(world):
    server, tmp, env = world
    alice, bob = alice_and_bob(env, tmp, server)
    bob_id = data(env, bob, "whoami")["id"]
    coords(env, bob, "share", "--lat", "-33.868820", "--lon", "151.209296")
    coords(env, alice, "share", "--lat", "47.376887", "--lon", "8.541694")
    assert data(env, alice, "fetch")["friends"][0]["location"]["latitude"] == -33.86882
    coords(env, alice, "send", "Bob", "MARKER-51d0 meet at the fountain")
    coords(env, bob, "send", "Alice", "MARKER-9e2b the door code is 4471")
    assert "MARKER-9e2b" in coords(env, alice, "chat", "Bob").stdout

    needles = [(f"{text!r} {i}", n) for text in ("MARKER-51d0 meet at the fountain", "MARKER-9e2b the door code is 4471",
                                                 "Bob", bob_id) for i, n in enumerate(encodings(text))]
    needles += [(f"{bob_id} key {i}", n) for i, n in enumerate(encodings(base64.urlsafe_b64decode(bob_id + "=")))]
    for number in (-33.86882, 151.209296, 47.376887, 8.541694):
        needles += [(f"{number} {i}", n) for i, n in enumerate(number_encodings(number))]
    needles += [(f"server {i}", n) for i, n in enumerate(encodings(server))]
    # public.json holds the user's own public link (id, name, relay) so `coords whoami` needs no
    # passphrase (docs/STORE.md): the relay's URL is there by design, nothing about friends.
    assert hits(alice, needles, skip=("public.json",)) == []
    everywhere = hits(alice, needles)
    assert everywhere and all(label.startswith("server") and label.endswith("public.json") for label in everywhere)

    # A rekey keeps everything readable.
    before = data(env, alice, "chat", "Bob")["messages"]
    assert "new key" in coords(env, alice, "rekey").stdout
    assert data(env, alice, "chat", "Bob")["messages"] == before
    assert hits(alice, needles, skip=("public.json",)) == []


def test_watch_deletes_a_disappearing_message_on_time(world):
    server, tmp, env = world
    alice, bob = alice_and_bob(env, tmp, server)
    coords(env, bob, "send", "Alice", "VANISH-0a7c gone in two seconds")
    shown = data(env, alice, "chat", "Bob", "--disappear-after", "2")
    assert [m["text"] for m in shown["messages"]] == ["VANISH-0a7c gone in two seconds"]
    # One round, then the watch sleeps its interval: it wakes when the message is due.
    watched = coords(env, alice, "watch", "--poll", "--interval", "5", "--count", "2").stdout
    assert "1 message disappeared." in watched
    assert data(env, alice, "chat", "Bob")["messages"] == []
