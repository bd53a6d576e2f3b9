"""Checked by `mypy --strict` (make test-python), never run: the package's documented usage is
typed end to end — `with cc.App(...) as app:` gives an App, records are typed, no Any leaks
into the caller's code."""
from typing import assert_type

import coordscore as cc


def usage(directory: str) -> str:
    with cc.App(directory, passphrase="correct horse battery") as app:
        assert_type(app, cc.App)
        identity: str = app.create_identity("Alice", "https://relay.example")
        friends: list[cc.Friend] = app.friends()
        upload = app.prepare_upload(cc.Location(47.37, 8.54, timestamp_ms=1))
        assert_type(upload, cc.Upload)
        body: bytes = cc.request_body(upload.request)
        return identity + str(len(friends)) + str(len(body))


with cc.Places("places.cgeo") as places:
    assert_type(places, cc.Places)
