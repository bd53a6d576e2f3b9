"""The §10 known answers are what the independent implementation computes (scripts/make-fs-vectors.py).

Here, not in tests/python: that suite also runs against the wheel in an environment without the
system's libsodium, which the second implementation loads through ctypes.

The Swift suite reproduces every byte of the file (ForwardSecrecyVectorTests); this test keeps the
file and the second implementation in step, so neither can drift alone.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_vector_file_matches_the_independent_implementation():
    script = os.path.join(ROOT, "scripts", "make-fs-vectors.py")
    result = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_check_notices_a_changed_byte(tmp_path):
    source = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "forward-secrecy-v1.json")
    text = open(source, encoding="utf-8").read()
    changed = tmp_path / "fs.json"
    changed.write_text(text.replace('"sk": "', '"sk": "0', 1), encoding="utf-8")
    script = os.path.join(ROOT, "scripts", "make-fs-vectors.py")
    result = subprocess.run([sys.executable, script, "--check", str(changed)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "differs" in result.stderr
