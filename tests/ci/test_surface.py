"""scripts/surface.py: one description of the C surface for both bindings (in `make test`)."""
import copy
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("surface", os.path.join(ROOT, "scripts", "surface.py"))
surface = importlib.util.module_from_spec(spec)
spec.loader.exec_module(surface)


def header():
    with open(surface.HEADER, encoding="utf-8") as handle:
        return surface.parse_header(handle.read())


def test_the_tree_is_current_and_both_faces_agree():
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "surface.py"), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_every_declared_function_and_code_is_read():
    text = open(surface.HEADER, encoding="utf-8").read()
    declared = set(re.findall(r"\b(coords_[a-z0-9_]+)\s*\(", re.sub(r"/\*.*?\*/", " ", text, flags=re.S)))
    parsed = header()
    assert {name for name, _, _ in parsed["functions"]} == declared
    assert len(parsed["errors"]) == len(re.findall(r"^#define COORDS_(?:OK|ERR_\w+) \d+", text, re.M))
    assert all(parsed["docs"].get(name) for name, _, _ in parsed["functions"])  # Javadoc comes from them


def test_a_new_export_that_no_binding_calls_fails_the_check():
    parsed = header()
    parsed["functions"].append(("coords_new_thing", "int32_t", [("CoordsApp*", "app"), ("CoordsError*", "out_error")]))
    problems = surface.faces_problems(parsed)
    assert problems == ["coords_new_thing is declared in the header but neither binding calls it"]
    assert '("coords_new_thing", "c_int32", ["APP", "ERR"])' in surface.python_surface(parsed)
    assert "int coords_new_thing(Pointer app, Structs.Error outError);" in surface.java_native(dict(parsed, docs={**parsed["docs"], "coords_new_thing": "New."}))


def test_a_c_type_without_a_mapping_is_named():
    parsed = header()
    parsed["functions"].append(("coords_odd", "int32_t", [("struct timeval*", "when")]))
    parsed["docs"]["coords_odd"] = "Odd."
    with pytest.raises(surface.SurfaceError, match="struct timeval"):
        surface.python_surface(parsed)
    with pytest.raises(surface.SurfaceError, match="struct timeval"):
        surface.java_native(parsed)


def test_records_py_must_declare_what_records_json_describes():
    records = surface.load_records()
    assert surface.python_records_problems(records) == []
    changed = copy.deepcopy(records)
    friend = next(r for r in changed if r["name"] == "Friend")
    friend["fields"].append({"name": "nickname", "type": "string?", "default": None})
    problems = surface.python_records_problems(changed)
    assert len(problems) == 1 and problems[0].startswith("records.py: Friend declares")
