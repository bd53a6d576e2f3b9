#!/usr/bin/env python3
"""Source rules a compiler cannot check, run by `make test` (test-format).

- Every `try?` in Sources/ and Apps/Sources/ is a decision: either the line carries a comment
  saying why ignoring the error is right (on the same line, or a comment line right above it),
  or it is part of a `guard` whose `else` throws — the error is replaced by a more precise one,
  not swallowed. A bare `try?` fails the check with its place.
- The CLI (Apps/Sources/CoordsCLI) never waits with `Task.sleep`: on Linux that runs on
  libdispatch's timers and pool, whose monitor then wakes the process every second for good
  (docs/PERFORMANCE.md, "Battery"); it waits with `Waiting.sleep`, a timer on NIO's event loop.

Usage: scripts/check-sources.py [ROOT]   (exit 1 and one line per finding when a rule is broken)
"""
import os
import re
import sys

ROOTS = ("Sources", "Apps/Sources")
TRY_OPTIONAL = re.compile(r"\btry\?")
TASK_SLEEP = re.compile(r"\bTask\.sleep\b")
CLI = os.path.join("Apps", "Sources", "CoordsCLI")


def code_part(line):
    """The line without a trailing // comment or string contents (rough, enough for our style)."""
    out, in_string, i = [], False, 0
    while i < len(line):
        c = line[i]
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            break
        if not in_string:
            out.append(c)
        i += 1
    return "".join(out)


def has_comment(line):
    return "//" in line and not line.strip().startswith("///")


def commented_above(lines, number):
    """Whether a `//` comment line sits right above the statement line `number` belongs to, or
    above a run of `try?` lines it is part of (one reason for several alike lines): the walk up
    continues while the line above ends with `,` or `(`, or holds a `try?` itself, or this line
    continues a condition (`&&`, `||`)."""
    j = number
    while j > 0:
        above = lines[j - 1].strip()
        if above.startswith("//") and not above.startswith("///"):
            return True
        here = lines[j].strip()
        continues = above.endswith((",", "(")) or TRY_OPTIONAL.search(code_part(above)) or here.startswith(("&&", "||"))
        if not continues:
            return False
        j -= 1
    return False


def converted_by_guard(lines, number):
    """Whether the `try?` on line `number` sits in a `guard … else { throw … }`: a `guard` opens
    the statement on this line or up to three lines above, and the first `else {` from here on
    (within four lines) is followed by `throw`."""
    opens = any(lines[i].strip().startswith("guard ") for i in range(max(0, number - 3), number + 1))
    if not opens:
        return False
    for i in range(number, min(len(lines), number + 5)):
        code = code_part(lines[i])
        if "else {" in code:
            rest = code.split("else {", 1)[1].strip()
            if not rest and i + 1 < len(lines):
                rest = lines[i + 1].strip()
            return rest.startswith("throw ")
    return False


def findings(root):
    for base in ROOTS:
        for directory, _, files in os.walk(os.path.join(root, base)):
            for name in sorted(files):
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                in_cli = os.path.relpath(path, root).startswith(CLI + os.sep)
                for number, line in enumerate(lines):
                    if in_cli and TASK_SLEEP.search(code_part(line)):
                        yield f"{os.path.relpath(path, root)}:{number + 1}: Task.sleep in the CLI — wait with Waiting.sleep (a timer on NIO's event loop)"
                    if not TRY_OPTIONAL.search(code_part(line)):
                        continue
                    if has_comment(line) or commented_above(lines, number):
                        continue
                    if converted_by_guard(lines, number):
                        continue
                    yield f"{os.path.relpath(path, root)}:{number + 1}: bare try? — say why ignoring the error is right in a // comment, or handle it"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = list(findings(root))
    for line in found:
        print(line)
    if found:
        print(f"check-sources: {len(found)} findings (see scripts/check-sources.py)", file=sys.stderr)
        return 1
    print("check-sources: every try? in Sources/ and Apps/Sources/ says why or converts the error; the CLI never waits with Task.sleep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
