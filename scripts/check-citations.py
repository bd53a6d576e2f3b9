#!/usr/bin/env python3
"""The protocol stands alone, run by `make test` (test-format):

- every `§N` or `§N.M` cited in docs/, the sources, the C header, the Python package and the
  scripts is a heading of docs/PROTOCOL.md (`## N.` or `### N.M`); a citation of another
  document's section (`RFC 9110 §7.8`) is not ours and is skipped;
- nothing in them points at a protocol text outside the repository (the PROTOCOL file of the
  steering folder `shared/` that sits beside a checkout).

Usage: scripts/check-citations.py [ROOT]   (exit 1 and one line per finding when a rule is broken)
"""
import os
import re
import sys

SCANNED = ("docs", "Sources", "Apps/Sources", "include", "python/coordscore", "scripts", "README.md", "Fuzz/Sources")
SUFFIXES = (".md", ".swift", ".h", ".py", ".yaml", ".sh", ".c")
CITATION = re.compile(r"(RFC[\s\u00a0]*\d+[\s\u00a0]*)?§(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)[.\s]")
OUTSIDE = re.compile("shared/" + r"PROTOCOL\.md")


def sections(protocol):
    """The section numbers docs/PROTOCOL.md defines."""
    found = set()
    with open(protocol, encoding="utf-8") as f:
        for line in f:
            match = HEADING.match(line)
            if match:
                found.add(match.group(1))
    return found


def files(root):
    for entry in SCANNED:
        path = os.path.join(root, entry)
        if os.path.isfile(path):
            yield path
        for folder, _, names in os.walk(path):
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    yield os.path.join(folder, name)


def findings(root):
    protocol = os.path.join(root, "docs", "PROTOCOL.md")
    known = sections(protocol)
    out = []
    for path in files(root):
        relative = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if OUTSIDE.search(line):
                    out.append(f"{relative}:{number}: points at a protocol text outside the repository; cite docs/PROTOCOL.md")
                for match in CITATION.finditer(line):
                    if match.group(1):
                        continue  # another document's section
                    if match.group(2) not in known:
                        out.append(f"{relative}:{number}: cites §{match.group(2)}, which docs/PROTOCOL.md does not have")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = findings(root)
    for line in problems:
        print(line)
    if problems:
        print(f"check-citations: {len(problems)} finding(s)")
        return 1
    print(f"check-citations: every § cited is a section of docs/PROTOCOL.md ({len(sections(os.path.join(root, 'docs', 'PROTOCOL.md')))} sections)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
