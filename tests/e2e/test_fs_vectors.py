"""The §7, §8.8, §10, §11 and §12 known answers are what the independent implementations compute
(scripts/make-fs-vectors.py, scripts/make-gateway-vectors.py, scripts/make-group-vectors.py,
scripts/make-object-vectors.py).

Here, not in tests/python: that suite also runs against the wheel in an environment without the
system's libsodium, which the second implementations load through ctypes.

The Swift suite reproduces every byte of the files (ForwardSecrecyVectorTests, GroupVectorTests, ObjectVectorTests)
and opens every gateway token (PushGatewayTests);
this test keeps each file and its second implementation in step, so neither can drift alone.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIRS = [
    ("make-fs-vectors.py", "forward-secrecy-v1.json"),
    ("make-group-vectors.py", "groups-v1.json"),
    ("make-object-vectors.py", "objects-v1.json"),
    ("make-envelope-vectors.py", "envelope-v2-payloads.json"),
    ("make-gateway-vectors.py", "gateway-v1.json"),
]


@pytest.mark.parametrize("script,vectors", PAIRS)
def test_vector_file_matches_the_independent_implementation(script, vectors):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("script,vectors", PAIRS)
def test_check_notices_a_changed_byte(tmp_path, script, vectors):
    source = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", vectors)
    text = open(source, encoding="utf-8").read()
    changed = tmp_path / vectors
    edited = text.replace('"description": "', '"description": "0', 1)
    assert edited != text
    changed.write_text(edited, encoding="utf-8")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), "--check", str(changed)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "differs" in result.stderr
