"""Two apps share positions through prepared requests and a toy in-memory relay.

    python3 examples/two_friends.py

The core never does I/O: it prepares HTTP requests and the host sends them. Here the "host"
hands them to a dictionary that behaves like a (reference) relay.
"""
import json
import tempfile
import time

try:
    import coordscore as cc  # the installed package (pip install coordscore-*.whl)
except ImportError:  # run from a source checkout: python/coordscore
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import coordscore as cc


class ToyRelay:
    """Keeps the latest blob per id, like PUT/POST /api/location on a real relay."""

    def __init__(self):
        self.blobs = {}

    def send(self, request: dict) -> bytes:
        body = json.loads(cc.request_body(request))
        if request["method"] == "PUT":
            self.blobs[body["pubkey"]] = {"blob": body["blob"], "updated": int(time.time()),
                                          "signature": body["signature"], "timestamp": body["timestamp"]}
            return b""
        return json.dumps({id: self.blobs.get(id) for id in body["ids"]}).encode()


relay = ToyRelay()
with tempfile.TemporaryDirectory() as home:
    options = dict(keychain_cost="minimum", durability="no_sync")
    with cc.App(f"{home}/alice", passphrase="alice pw", **options) as alice, \
         cc.App(f"{home}/bob", passphrase="bob pw", **options) as bob:
        alice.create_identity("Alice", "https://relay.example")
        bob.create_identity("Bob", "https://relay.example")
        alice.add_friend_link(bob.friend_link())
        bob.add_friend_link(alice.friend_link())
        print("safety number:", alice.safety_number(bob.public_key()))

        fix = cc.Location(52.5200, 13.4050, accuracy=8, timestamp_ms=int(time.time() * 1000))
        upload = alice.prepare_upload(fix)
        relay.send(upload["request"])
        alice.mark_upload_succeeded(upload["fix_timestamp"])

        for fetch in bob.prepare_fetches():
            outcome = bob.process_fetch_response(relay.send(fetch))
            for friend in outcome["updated"]:
                where = friend["location"]
                print(f"Bob sees {friend['name']} at {where['latitude']}, {where['longitude']} ({friend['authenticity']})")
        for update in bob.updates():
            print("update:", update["manager"], update["type"])
