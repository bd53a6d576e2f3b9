#!/usr/bin/env python3
"""Fails on a direct call into one platform's C library outside the platform shim (in make test).

The library that ships to phones (Sources/: CoordsCore, CoordsFFI) reaches the C library only
through Sources/CPlatform (docs/MOBILE.md, "Portable sources"): its header gives the POSIX calls
that are the same on Linux, Android and Apple, and CPlatform.c holds one section per platform for
what differs. So no Swift file under Sources/ may

  - import Glibc, Musl, Android, Bionic, Darwin or WinSDK (or test for them with canImport),
  - qualify a call with one of those modules (`Glibc.read(…)`),
  - bind a C symbol by name with @_silgen_name (it bypasses every header),
  - branch on the operating system with `#if os(…)` (the shim is where platforms differ).

Usage: scripts/check-platform-calls.py [ROOT]   (exit 1 and one line per finding)
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBCS = r"(?:Glibc|Musl|Android|Bionic|Darwin|WinSDK|ucrt)"
RULES = [
    (re.compile(rf"^\s*(?:@_exported\s+|@preconcurrency\s+|(?:public|internal|package|private|fileprivate)\s+)*import\s+{LIBCS}\b"),
     "imports a platform's C library: import CPlatform instead"),
    (re.compile(rf"canImport\(\s*{LIBCS}\s*\)"), "tests for a platform's C library: the difference belongs in Sources/CPlatform"),
    (re.compile(rf"(?<![\w.]){LIBCS}\.[a-z_]\w*\s*\("), "calls into a platform's C library by name: add a coords_* function to CPlatform"),
    (re.compile(r"@_silgen_name\b"), "binds a C symbol with @_silgen_name: declare it in CPlatform.h"),
    (re.compile(r"^\s*#(?:if|elseif)\b.*\bos\("), "branches on the operating system: the shim is where platforms differ"),
]


def findings(root):
    out = []
    sources = os.path.join(root, "Sources")
    for directory, _, files in os.walk(sources):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    code = line.split("//", 1)[0]
                    for pattern, why in RULES:
                        if pattern.search(code):
                            out.append(f"{os.path.relpath(path, root)}:{number}: {why}: {line.strip()}")
    return out


def main():
    problems = findings(ROOT)
    for problem in problems:
        print(f"check-platform-calls: {problem}", file=sys.stderr)
    if problems:
        return 1
    print("check-platform-calls: every C library call in Sources/ goes through CPlatform")
    return 0


if __name__ == "__main__":
    sys.exit(main())
