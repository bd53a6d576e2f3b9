#!/usr/bin/env python3
"""The code blocks of README.md and docs/*.md, compiled and run (so the docs cannot rot).

    scripts/doc-snippets.py extract FILE LANG INDEX   print one block (LANG swift|c|python, INDEX from 0)
    scripts/doc-snippets.py check                     compile every swift, c and python block; run the
                                                      whole programs (make test-docs)

Blocks fenced as ```swift, ```c or ```python are checked; other fences (sh, text, json) are not.
A block may be preceded by an HTML comment that declares what it assumes, so that a fragment is
real code without repeating boilerplate:

    <!-- snippet: app: CoordsApp, bobID: String -->      Swift: parameters of the wrapping function
    <!-- snippet: CoordsApp *app; -->                     C: declarations before the fragment
    <!-- snippet: import coordscore as cc -->             Python: lines run before the fragment
    <!-- snippet: header -->                              C: an excerpt of include/coordscore.h (must match it)

Swift blocks that start with `import` are whole files; others are wrapped in an async throwing
function. Everything is type-checked against the debug build's modules (.build/debug/Modules).
C blocks with `main(` are whole programs: compiled with -Wall -Werror against the debug
libcoordscore.so and run; others are wrapped in main() and compiled. Python blocks are run with
the package from python/ and the debug library.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"(?:<!--\s*snippet:\s*(?P<context>.*?)\s*-->\s*\n)?^```(?P<lang>\w+)[^\n]*\n(?P<code>.*?)^```", re.S | re.M)
LANGS = ("swift", "c", "python")


def blocks(path: pathlib.Path):
    """(language, code, context) for each checked block of a Markdown file, in order."""
    for match in FENCE.finditer(path.read_text()):
        if match.group("lang") in LANGS:
            yield match.group("lang"), match.group("code"), (match.group("context") or "").strip()


def documents():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def fail(message: str) -> None:
    print(f"doc-snippets: {message}", file=sys.stderr)
    sys.exit(1)


def check() -> None:
    work = pathlib.Path(tempfile.mkdtemp(prefix="doc-snippets-"))
    swift_files, counts = [], {"swift": 0, "c": 0, "python": 0}
    library = ROOT / ".build" / "debug"
    env = dict(os.environ, COORDSCORE_LIB=str(library / "libcoordscore.so"), PYTHONPATH=str(ROOT / "python"))
    for document in documents():
        for index, (lang, code, context) in enumerate(blocks(document)):
            where = f"{document.relative_to(ROOT)} block {index} ({lang})"
            counts[lang] += 1
            name = re.sub(r"\W", "_", f"{document.stem}_{index}")
            if lang == "swift":
                if code.lstrip().startswith("import"):
                    source = code
                else:
                    indented = "".join("    " + line if line.strip() else line for line in code.splitlines(True))
                    source = (f"import CoordsCore\nimport Foundation\n\n// {where}\n"
                              f"func snippet_{name}({context}) async throws {{\n{indented}}}\n")
                path = work / f"{name}.swift"
                path.write_text(source)
                swift_files.append((where, path))
            elif lang == "c":
                if context == "header":
                    squash = lambda text: re.sub(r"\s+", " ", text).strip()
                    if squash(code) not in squash((ROOT / "include" / "coordscore.h").read_text()):
                        fail(f"{where} is marked as a header excerpt but does not match include/coordscore.h")
                    continue
                whole = "main(" in code
                source = code if whole else (
                    "#include <coordscore.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                    f"int main(void) {{\n{context}\n{code}\nreturn 0;\n}}\n")
                path = work / f"{name}.c"
                path.write_text(source)
                binary = work / name
                compiled = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable",
                                           f"-I{ROOT / 'include'}", str(path), f"-L{library}", "-lcoordscore",
                                           f"-Wl,-rpath,{library}", "-o", str(binary)], capture_output=True, text=True)
                if compiled.returncode != 0:
                    fail(f"{where} does not compile:\n{compiled.stderr}")
                ran = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=60)
                if ran.returncode != 0:
                    fail(f"{where} exited {ran.returncode}:\n{ran.stdout}{ran.stderr}")
            else:
                source = (context + "\n" if context else "") + code
                path = work / f"{name}.py"
                path.write_text(source)
                ran = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=work, timeout=120)
                if ran.returncode != 0:
                    fail(f"{where} failed:\n{ran.stdout}{ran.stderr}")
    if swift_files:
        modules = ROOT / ".build" / "debug" / "Modules"
        if not modules.exists():
            modules = ROOT / ".build" / "debug"
        command = ["swiftc", "-typecheck", "-parse-as-library", "-swift-version", "6", "-I", str(modules),
                   "-I", str(ROOT / "Sources" / "CSodium"), "-I", str(ROOT / "Sources" / "CLMDB"),
                   "-Xcc", f"-fmodule-map-file={ROOT / '.build' / 'debug' / 'CGeoData.build' / 'module.modulemap'}",
                   "-I", str(ROOT / "Sources" / "CGeoData" / "include"),
                   "-Xcc", f"-fmodule-map-file={ROOT / '.build' / 'debug' / 'CPlatform.build' / 'module.modulemap'}",
                   "-I", str(ROOT / "Sources" / "CPlatform" / "include")] + [str(path) for _, path in swift_files]
        checked = subprocess.run(command, capture_output=True, text=True)
        if checked.returncode != 0:
            fail("Swift snippets do not compile:\n" + checked.stderr)
        # Fragments show values without using them; every other warning fails the check.
        warnings = [line for line in checked.stderr.splitlines()
                    if ": warning:" in line and "[#no-usage]" not in line and "is unused" not in line]
        if warnings:
            fail("Swift snippets compile with warnings:\n" + "\n".join(warnings))
    total = sum(counts.values())
    print(f"doc-snippets: {total} passed, 0 failed ({counts['swift']} Swift type-checked, {counts['c']} C, "
          f"{counts['python']} Python run)")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "extract":
        _, _, file, lang, index = sys.argv
        found = [code for block_lang, code, _ in blocks(ROOT / file) if block_lang == lang]
        if int(index) >= len(found):
            fail(f"{file} has no {lang} block {index}")
        sys.stdout.write(found[int(index)])
    elif len(sys.argv) == 2 and sys.argv[1] == "check":
        check()
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
