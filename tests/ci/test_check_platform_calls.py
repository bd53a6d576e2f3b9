"""scripts/check-platform-calls.py: a direct C library call outside Sources/CPlatform fails make test."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("check", os.path.join(ROOT, "scripts", "check-platform-calls.py"))
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def test_the_sources_pass():
    assert check.findings(ROOT) == []


def test_each_kind_of_direct_call_is_found(tmp_path):
    source = tmp_path / "Sources" / "CoordsCore"
    source.mkdir(parents=True)
    (source / "Bad.swift").write_text(
        "#if canImport(Glibc)\nimport Glibc\n#elseif os(iOS)\n@preconcurrency import Darwin\n#endif\n"
        "let n = Glibc.read(fd, p, 4)\n@_silgen_name(\"sched_setaffinity\") func pin() -> Int32\n"
        "// import Glibc in a comment is fine\nlet ok = coords_read(fd, p, 4)\n")
    found = check.findings(str(tmp_path))
    lines = sorted({int(f.split(":")[1]) for f in found})
    assert lines == [1, 2, 3, 4, 6, 7], found
