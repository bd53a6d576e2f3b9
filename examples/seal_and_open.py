"""Seal a position for yourself and a friend, then open it as the friend (run: python3 examples/seal_and_open.py)."""
import time

try:
    import coordscore as cc  # the installed package (pip install coordscore-*.whl)
except ImportError:  # run from a source checkout: python/coordscore
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import coordscore as cc

alice_seed, alice = cc.generate_identity()
bob_seed, bob = cc.generate_identity()

here = cc.Location(47.3769, 8.5417, altitude=408, accuracy=10, timestamp_ms=int(time.time() * 1000))
blob = cc.seal(here, [alice, bob])  # the sender comes first, so she can read her own blob
print(f"sealed {len(blob)} bytes")

seen = cc.open_blob(bob_seed, blob)
print(f"Bob sees Alice at {seen.latitude:.4f}, {seen.longitude:.4f}")

eve_seed, _ = cc.generate_identity()
try:
    cc.open_blob(eve_seed, blob)
except cc.CoordsException as error:
    print(f"Eve cannot: {error.message} (code {error.code})")
