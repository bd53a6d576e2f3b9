"""The JVM binding (bindings/jvm) in `make test`: scripts/jvm.sh compiles it with javac (every
lint and Javadoc check, warnings as errors), compiles the Kotlin usage file with kotlinc, and
runs the JUnit 5 suite — vectors, an app's life, hostile arguments, use after close, and a share,
a fetch, messages and a group session against the live relay this test starts.

The library comes from the build (COORDSCORE_LIB, `make lib`).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

from e2e_support import Relay  # noqa: E402


def test_the_jvm_suite_passes_against_a_live_relay(tmp_path):
    with Relay(str(tmp_path / "relay")) as relay:
        env = dict(os.environ, COORDS_RELAY_URL=relay.url)
        run = subprocess.run([os.path.join(ROOT, "scripts", "jvm.sh"), "test"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
    report = run.stdout[-8000:] + run.stderr[-4000:]
    assert run.returncode == 0, report
    found = re.search(r"\[\s*(\d+) tests successful\s*\]", run.stdout)
    failed = re.search(r"\[\s*(\d+) tests failed\s*\]", run.stdout)
    skipped = re.search(r"\[\s*(\d+) tests skipped\s*\]", run.stdout)
    assert found and int(found.group(1)) >= 26, report  # every scenario ran
    assert failed and failed.group(1) == "0" and skipped and skipped.group(1) == "0", report
