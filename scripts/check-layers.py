#!/usr/bin/env python3
"""docs/ARCHITECTURE.md's layer table, checked against the code (make test-docs).

The "## Layers" table names each layer of CoordsCore, its folder and what it may depend on. This
script reads the table, finds the types each folder of Sources/CoordsCore declares, and fails
when a file uses a type of a layer its own layer may not depend on, or imports a C module
(CSodium, CLMDB, CPlatform) its layer does not list. A layer that is not in the table, or a folder of
Sources/CoordsCore that no row names, fails too: the table and the code cannot drift apart.

It also reads the "## Managers" table: each manager's row must list every case of its
`…ReconcileMessage` enum, and nothing else; and the "## Manager order" line: the managers from
the lowest to the top, each using only those before it. Every top-level type of
Sources/CoordsCore/Managers (a manager with its extensions, or a helper or record type) is a node
of one graph whose edges are the types it uses: a manager using one later in the order fails,
and so does any cycle (also one through helpers), with its members named.

Usage: scripts/check-layers.py [ROOT]   (exit 1 with one line per finding)
"""
import os
import re
import sys

C_MODULES = ("CSodium", "CLMDB", "CPlatform")
DECLARATION = re.compile(
    r"^(?:@[\w()]+\s+)*(?:(?:public|internal|package|private|fileprivate|final|nonisolated|indirect)\s+)*"
    r"(?:struct|enum|class|actor|protocol|typealias)\s+(\w+)", re.M)
IDENTIFIER = re.compile(r"\b[A-Z]\w*\b")
IMPORT = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*import\s+(\w+)", re.M)


def strip(source):
    """Source without comments and string literals (rough; enough to find type names)."""
    source = re.sub(r'"""(?:.|\n)*?"""', '""', source)
    source = re.sub(r'#"(?:.|\n)*?"#', '""', source)
    source = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', source)
    source = re.sub(r"/\*(?:.|\n)*?\*/", "", source)
    return re.sub(r"//[^\n]*", "", source)


def read_table(root):
    """[(layer, folders, depends-on text)] from the Layers table, in order."""
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    section = text.split("## Layers", 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| Layer"):
            if rows and not line.startswith("|"):
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) >= 3:
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1]), cells[2]))
    return rows


def reconcile_findings(root):
    """Cases of each manager's ReconcileMessage enum missing from (or unknown to) its row."""
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    sources = ""
    managers = os.path.join(root, "Sources", "CoordsCore", "Managers")
    for name in sorted(os.listdir(managers)):
        if name.endswith(".swift"):
            sources += strip(open(os.path.join(managers, name), encoding="utf-8").read())
    findings = []
    for enum, body in re.findall(r"enum (\w+)ManagerReconcileMessage\b[^{]*\{(.*?)\n\}", sources, re.S):
        cases = set(re.findall(r"^    case (\w+)", body, re.M))
        row = next((line for line in text.splitlines() if line.startswith(f"| `{enum}Manager` |")), None)
        if row is None:
            findings.append(f"docs/ARCHITECTURE.md: the Managers table has no row for {enum}Manager")
            continue
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        listed = set(re.findall(r"`(\w+)`", cells[2])) if len(cells) > 2 else set()
        for case in sorted(cases - listed):
            findings.append(f"docs/ARCHITECTURE.md: {enum}Manager's row does not list the reconcile message `{case}`")
        for case in sorted(listed - cases):
            findings.append(f"docs/ARCHITECTURE.md: {enum}Manager's row lists `{case}`, which {enum}ManagerReconcileMessage does not have")
    return findings


def manager_order(root):
    """The managers of the "## Manager order" section, lowest first."""
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    if "## Manager order" not in text:
        return None
    section = text.split("## Manager order", 1)[1].split("\n## ", 1)[0]
    line = next((l for l in section.splitlines() if l.startswith("`")), "")
    return re.findall(r"`(\w+)`", line)


TOP_LEVEL = re.compile(
    r"^(?:@[\w()]+\s+)*(?:(?:public|internal|package|private|fileprivate|final|nonisolated|indirect)\s+)*"
    r"(?:struct|enum|class|actor|protocol|extension)\s+(\w+)[^\n]*\{[^\n]*$", re.M)


def blocks(source):
    """(type name, body) for each top-level declaration or extension at column 0: one line when
    its braces close on it, else up to the next `}` at column 0."""
    found = []
    for match in TOP_LEVEL.finditer(source):
        line = match.group(0)
        if line.count("{") == line.count("}"):
            found.append((match.group(1), line))
            continue
        end = source.find("\n}", match.end())
        found.append((match.group(1), source[match.start():len(source) if end < 0 else end]))
    return found


def manager_findings(root):
    """Managers used out of the stated order, and cycles among the Managers folder's types."""
    order = manager_order(root)
    if order is None:
        return ["docs/ARCHITECTURE.md: no \"## Manager order\" section (the managers, lowest first, joined by →)"]
    folder = os.path.join(root, "Sources", "CoordsCore", "Managers")
    bodies = {}  # type -> [(file, body)]
    for name in sorted(os.listdir(folder)):
        if name.endswith(".swift"):
            source = strip(open(os.path.join(folder, name), encoding="utf-8").read())
            for declared, body in blocks(source):
                bodies.setdefault(declared, []).append((name, body))
    missing = [m for m in order if m not in bodies]
    findings = [f"docs/ARCHITECTURE.md: the manager order names {m}, which Sources/CoordsCore/Managers does not declare" for m in missing]
    for declared in sorted(bodies):
        if (declared.endswith("Manager") or declared in ("LiveSession", "CoordsApp")) and declared not in order:
            findings.append(f"docs/ARCHITECTURE.md: the manager order does not place {declared}")
    edges = {}
    where = {}
    for declared, parts in bodies.items():
        for file, body in parts:
            for match in IDENTIFIER.finditer(body):
                used = match.group(0)
                if used != declared and used in bodies:
                    edges.setdefault(declared, set()).add(used)
                    where.setdefault((declared, used), f"Sources/CoordsCore/Managers/{file}")
    rank = {m: i for i, m in enumerate(order)}
    for source_type, targets in sorted(edges.items()):
        for target in sorted(targets):
            if source_type in rank and target in rank and rank[target] > rank[source_type]:
                findings.append(
                    f"{where[(source_type, target)]}: {source_type} uses {target}, which comes after it in the manager order "
                    f"(docs/ARCHITECTURE.md, Manager order: {' → '.join(order)})")
    # Cycles: Tarjan's strongly connected components.
    index, low, stack, on_stack, components, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(bodies):
        if node not in index:
            visit(node)
    for component in components:
        findings.append(f"Sources/CoordsCore/Managers: a dependency cycle among {', '.join(component)} (no type there may reach itself)")
    return findings


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    core = os.path.join(root, "Sources", "CoordsCore")
    rows = read_table(root)
    layers = {}  # folder name -> (layer, allowed layer names, allowed C modules)
    names = [layer for layer, _, _ in rows]
    findings = []
    for index, (layer, folders, depends) in enumerate(rows):
        for folder in folders:
            if not folder.startswith("Sources/CoordsCore/"):
                continue
            above = names[:index] if "all of the above" in depends else []
            allowed = {name for name in names if re.search(rf"\b{re.escape(name)}\b", depends)} | set(above)
            modules = {m for m in C_MODULES if m in depends} | ({m for m in C_MODULES} if "all of the above" in depends else set())
            layers[folder.split("/")[-1]] = (layer, allowed, modules)
    folders = sorted(f for f in os.listdir(core) if os.path.isdir(os.path.join(core, f)) and not f.endswith(".docc"))
    for folder in folders:
        if folder not in layers:
            findings.append(f"Sources/CoordsCore/{folder}: no row of the Layers table in docs/ARCHITECTURE.md names it")
    files = {}
    owner = {}  # type name -> folder declaring it
    for folder in folders:
        for directory, _, entries in os.walk(os.path.join(core, folder)):
            for name in sorted(entries):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    source = strip(open(path, encoding="utf-8").read())
                    files[path] = (folder, source)
                    for declared in DECLARATION.findall(source):
                        owner.setdefault(declared, folder)
    for path, (folder, source) in sorted(files.items()):
        if folder not in layers:
            continue
        layer, allowed, modules = layers[folder]
        relative = os.path.relpath(path, root)
        for module in IMPORT.findall(source):
            if module in C_MODULES and module not in modules:
                findings.append(f"{relative}: imports {module}, which the {layer} layer may not use (docs/ARCHITECTURE.md, Layers)")
        seen = set()
        for match in IDENTIFIER.finditer(source):
            used = match.group(0)
            other = owner.get(used)
            if other is None or other == folder or other not in layers or used in seen:
                continue
            other_layer = layers[other][0]
            if other_layer not in allowed:
                seen.add(used)
                line = source.count("\n", 0, match.start()) + 1
                findings.append(
                    f"{relative}:{line}: uses {used} from the {other_layer} layer, which the {layer} layer may not depend on "
                    f"(docs/ARCHITECTURE.md, Layers: {layer} depends on {', '.join(sorted(allowed | modules)) or 'nothing'})")
    findings += reconcile_findings(root)
    findings += manager_findings(root)
    for finding in findings:
        print(finding)
    if findings:
        print(f"check-layers: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(files)} files in {len(folders)} layers agree with docs/ARCHITECTURE.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
