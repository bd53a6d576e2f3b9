"""scripts/check-sources.py: each rule fails on a tree that breaks it and passes a clean one."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-sources.py")


def run(tree, files):
    for path, text in files.items():
        full = tree / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return subprocess.run([sys.executable, SCRIPT, str(tree)], capture_output=True, text=True)


def test_a_clean_tree_passes(tmp_path):
    result = run(tmp_path, {
        "Sources/A/a.swift": "let x = try? f()  // absent is fine here\n",
        "Apps/Sources/CoordsCLI/b.swift": "try await Waiting.sleep(seconds: 1)\n// Task.sleep is named in a comment only\n",
        "Apps/Sources/CoordsRelay/c.swift": "try await Task.sleep(for: .seconds(1))\n",  # the relay may
    })
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_bare_try_optional_fails_with_its_place(tmp_path):
    result = run(tmp_path, {"Sources/A/a.swift": "let a = 1\nlet x = try? f()\n"})
    assert result.returncode == 1
    assert "Sources/A/a.swift:2: bare try?" in result.stdout


def test_task_sleep_in_the_cli_fails_with_its_place(tmp_path):
    result = run(tmp_path, {"Apps/Sources/CoordsCLI/w.swift": "func f() async throws {\n    try await Task.sleep(for: .seconds(60))\n}\n"})
    assert result.returncode == 1
    assert "Apps/Sources/CoordsCLI/w.swift:2: Task.sleep in the CLI" in result.stdout
