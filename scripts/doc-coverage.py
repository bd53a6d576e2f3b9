#!/usr/bin/env python3
"""Every public declaration of a module has a doc comment (the brief: "Every public Swift API …
has a doc comment saying what it does, who owns memory, and which errors it returns").

Reads a module's symbol graphs and lists each public symbol declared in the module's sources
that has no doc comment of its own. A member that implements a protocol requirement
(`description`, an error's `code`, a store codec's `withStoreBytes`, a relay store's `put`, …)
is covered by the requirement's documentation, as DocC shows it, and is not listed. Exit
status 1 when anything is listed.

    python3 scripts/doc-coverage.py [GRAPH_DIR [MODULE [SOURCE_DIR]]]

Defaults: .build-docs/coords-graphs (what scripts/docs.sh writes), CoordsCore, Sources/MODULE.
`make test-docs` runs it for CoordsCore and, with scripts/relay-symbol-graph.sh, for CoordsRelay.
"""
import glob
import json
import os
import sys

# Requirements of the standard library's protocols our types conform to (by the name the
# symbol graph gives the protocol).
STDLIB_REQUIREMENTS = {
    "Swift.CustomStringConvertible": {"description"},
    "Swift.CustomDebugStringConvertible": {"debugDescription"},
    "Swift.Comparable": {"<(_:_:)"},
    "Swift.Equatable": {"==(_:_:)"},
    "Swift.Hashable": {"hash(into:)"},
    "Swift.Encodable": {"encode(to:)"},
    "Swift.Decodable": {"init(from:)"},
    "Swift.RawRepresentable": {"rawValue", "init(rawValue:)"},
    "Swift.Sequence": {"makeIterator()", "Element", "Iterator"},
    "Swift.IteratorProtocol": {"next()", "Element"},
    "_Concurrency.AsyncSequence": {"makeAsyncIterator()", "Element", "AsyncIterator"},
    "_Concurrency.AsyncIteratorProtocol": {"next()", "Element"},
}


def main():
    graph_dir = sys.argv[1] if len(sys.argv) > 1 else ".build-docs/coords-graphs"
    module = sys.argv[2] if len(sys.argv) > 2 else "CoordsCore"
    source = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else f"Sources/{module}")
    files = sorted(glob.glob(f"{graph_dir}/{module}.symbols.json") + glob.glob(f"{graph_dir}/{module}@*.symbols.json"))
    if not files:
        sys.exit(f"doc-coverage: no {module} symbol graphs in {graph_dir}")
    symbols, relationships = {}, []
    for path in files:
        with open(path) as f:
            graph = json.load(f)
        for symbol in graph["symbols"]:
            symbols[symbol["identifier"]["precise"]] = symbol
        relationships += graph["relationships"]

    # Requirements of the module's own protocols, by protocol id.
    requirements = {}
    for r in relationships:
        if r["kind"] == "requirementOf" and r["source"] in symbols:
            requirements.setdefault(r["target"], set()).add(symbols[r["source"]]["pathComponents"][-1])
    conformances, parents, implementations = {}, {}, set()
    for r in relationships:
        if r["kind"] == "conformsTo":
            conformances.setdefault(r["source"], set()).update({r["target"], r.get("targetFallback", r["target"])})
        elif r["kind"] == "memberOf":
            parents[r["source"]] = r["target"]
        elif r["kind"] == "defaultImplementationOf":
            implementations.add(r["source"])

    def is_witness(precise, name):
        if precise in implementations:
            return True
        return any(
            name in requirements.get(protocol, ()) or name in STDLIB_REQUIREMENTS.get(protocol, ())
            for protocol in conformances.get(parents.get(precise), ())
        )

    missing = []
    for precise, symbol in symbols.items():
        path = symbol.get("location", {}).get("uri", "").removeprefix("file://")
        if "::SYNTHESIZED::" in precise or not path.startswith(source + "/"):
            continue
        if symbol.get("accessLevel") not in ("public", "open") or symbol.get("docComment"):
            continue
        name = symbol["pathComponents"][-1]
        if is_witness(precise, name):
            continue
        line = symbol["location"]["position"]["line"] + 1
        missing.append((os.path.relpath(path), line, symbol["kind"]["displayName"].lower(), ".".join(symbol["pathComponents"])))
    for path, line, kind, name in sorted(missing):
        print(f"{path}:{line}: {kind} {name} has no doc comment")
    if missing:
        print(f"doc-coverage: {len(missing)} public declarations of {module} without a doc comment", file=sys.stderr)
        sys.exit(1)
    print(f"doc-coverage: every public declaration of {module} has a doc comment ({len(symbols)} symbols read)")


if __name__ == "__main__":
    main()
