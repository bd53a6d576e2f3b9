"""scripts/check-sources.py: a bare `try?` in Sources/ or Apps/Sources/ fails `make test`."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-sources.py")


def check(tmp_path, source):
    folder = tmp_path / "Sources" / "X"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "A.swift").write_text(source)
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)


def test_a_bare_try_optional_fails_with_its_place(tmp_path):
    result = check(tmp_path, "func f() {\n    let x = try? g()\n}\n")
    assert result.returncode == 1
    assert "Sources/X/A.swift:2: bare try?" in result.stdout


def test_a_reason_on_the_line_or_above_passes(tmp_path):
    assert check(tmp_path, "let x = try? g()  // g only fails when empty: nil is the answer\n").returncode == 0
    assert check(tmp_path, "// one reason for both:\nlet a = try? g()\nlet b = try? h()\n").returncode == 0
    # A doc comment is not a reason.
    assert check(tmp_path, "/// The value.\nlet x = try? g()\n").returncode == 1
    # A reason that belongs to another statement does not carry over.
    assert check(tmp_path, "// why\nlet a = 1\nlet x = try? g()\n").returncode == 1


def test_a_guard_that_throws_a_better_error_passes(tmp_path):
    assert check(tmp_path, "guard let k = try? Key(text) else { throw Bad.key(text) }\n").returncode == 0
    assert check(tmp_path, "guard let k = try? Key(text),\n    k.ok\nelse {\n    throw Bad.key(text)\n}\n").returncode == 0
    # An else that returns swallows the error: it needs a reason.
    assert check(tmp_path, "guard let k = try? Key(text) else { return nil }\n").returncode == 1


def test_strings_and_comments_do_not_count(tmp_path):
    assert check(tmp_path, 'let s = "try? in a string"\n// try? in a comment\n').returncode == 0


LAYERS = os.path.join(ROOT, "scripts", "check-layers.py")
TABLE = """# Architecture

## Layers

| Layer | Folder | Depends on |
|---|---|---|
| C modules | `Sources/CSodium` | system libraries |
| Support | `Sources/CoordsCore/Support` | the C library |
| Wire | `Sources/CoordsCore/Wire` | Support |
| Store | `Sources/CoordsCore/Store` | CLMDB, Support, Wire |
| Managers | `Sources/CoordsCore/Managers` | all of the above |

## Manager order

`LowManager` → `App`

## Next
"""


def layers(tmp_path, files, table=TABLE):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "ARCHITECTURE.md").write_text(table)
    for name, text in files.items():
        path = tmp_path / "Sources" / "CoordsCore" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return subprocess.run([sys.executable, LAYERS, str(tmp_path)], capture_output=True, text=True)


BASE = {
    "Support/Hex.swift": "enum Hex {}\n",
    "Wire/Blob.swift": "public struct Blob { let h = Hex.self }\n",
    "Store/Table.swift": "import CLMDB\nstruct Row { var b: Blob }\n",
    "Managers/App.swift": "actor App { var r: Row?; var b: Blob?; let low: LowManager }\n",
    "Managers/Low.swift": "actor LowManager {\n    var queue: Queue?\n}\n",
    "Managers/Queue.swift": "enum Queue {\n    static let rows: [Row] = []\n}\n",
}


def test_layers_that_follow_the_table_pass(tmp_path):
    result = layers(tmp_path, BASE)
    assert result.returncode == 0, result.stdout


def test_a_lower_layer_using_a_higher_one_fails(tmp_path):
    files = dict(BASE, **{"Wire/Uses.swift": "// Row in a comment is fine\nfunc f(_ r: Row) {}\n"})
    result = layers(tmp_path, files)
    assert result.returncode == 1
    assert "Sources/CoordsCore/Wire/Uses.swift:2: uses Row from the Store layer" in result.stdout


def test_a_c_module_the_row_does_not_list_fails(tmp_path):
    result = layers(tmp_path, dict(BASE, **{"Wire/Sodium.swift": "import CSodium\n"}))
    assert result.returncode == 1 and "imports CSodium" in result.stdout


def test_a_folder_without_a_row_fails(tmp_path):
    result = layers(tmp_path, dict(BASE, **{"Extra/X.swift": "enum X {}\n"}))
    assert result.returncode == 1 and "Sources/CoordsCore/Extra: no row" in result.stdout


def test_a_manager_using_one_later_in_the_order_fails(tmp_path):
    files = dict(BASE, **{"Managers/Low.swift": "actor LowManager {\n    weak var app: App?\n}\n"})
    result = layers(tmp_path, files)
    assert result.returncode == 1
    assert "LowManager uses App, which comes after it in the manager order" in result.stdout
    assert "a dependency cycle among App, LowManager" in result.stdout


def test_a_cycle_through_a_helper_fails_and_names_its_members(tmp_path):
    # The helper below LowManager reaches back up to it: a knot the order alone would not see.
    files = dict(BASE, **{"Managers/Queue.swift": "enum Queue {\n    static func owner(_ m: LowManager) {}\n}\n"})
    result = layers(tmp_path, files)
    assert result.returncode == 1
    assert "a dependency cycle among LowManager, Queue" in result.stdout


def test_a_manager_the_order_does_not_place_fails(tmp_path):
    files = dict(BASE, **{"Managers/Other.swift": "actor OtherManager {}\n"})
    result = layers(tmp_path, files)
    assert result.returncode == 1 and "the manager order does not place OtherManager" in result.stdout


CITATIONS = os.path.join(ROOT, "scripts", "check-citations.py")


def citations(tmp_path, protocol, source):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "PROTOCOL.md").write_text(protocol)
    (tmp_path / "Sources").mkdir(exist_ok=True)
    (tmp_path / "Sources" / "A.swift").write_text(source)
    return subprocess.run([sys.executable, CITATIONS, str(tmp_path)], capture_output=True, text=True)


def test_a_citation_of_a_missing_section_fails_with_its_place(tmp_path):
    protocol = "# P\n## 7. Messages\n### 7.1 Envelope\n"
    assert citations(tmp_path, protocol, "/// PROTOCOL.md §7.1 and §7\n").returncode == 0
    result = citations(tmp_path, protocol, "let a = 1\n/// see §7.3\n")
    assert result.returncode == 1 and "Sources/A.swift:2: cites §7.3" in result.stdout
    # Another document's section is not ours.
    assert citations(tmp_path, protocol, "/// RFC 9110 §7.8 allows it\n").returncode == 0


def test_a_pointer_outside_the_repository_fails(tmp_path):
    result = citations(tmp_path, "## 1. Keys\n", "/// normative: ../" + "shared/PROTOCOL.md §1\n")
    assert result.returncode == 1 and "outside the repository" in result.stdout
