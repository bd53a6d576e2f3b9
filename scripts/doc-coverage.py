#!/usr/bin/env python3
"""Every public declaration of CoordsCore has a doc comment (STYLE: "Every public Swift API …
has a doc comment saying what it does, who owns memory, and which errors it returns").

Reads the symbol graphs that scripts/docs.sh writes (.build-docs/coords-graphs) and lists each
public symbol declared in Sources/CoordsCore that has no doc comment of its own. A member that
implements a protocol requirement (`description`, `code` of an error, a store codec's
`withStoreBytes`, …) is covered by the requirement's documentation, as DocC shows it, and is
not listed. Exit status 1 when anything is listed.

    python3 scripts/doc-coverage.py [GRAPH_DIR]
"""
import glob
import json
import sys

# Requirements of the standard library's protocols our types conform to (by the name the
# symbol graph gives the protocol).
STDLIB_REQUIREMENTS = {
    "Swift.CustomStringConvertible": {"description"},
    "Swift.CustomDebugStringConvertible": {"debugDescription"},
    "Swift.Comparable": {"<(_:_:)"},
    "Swift.Equatable": {"==(_:_:)"},
    "Swift.Hashable": {"hash(into:)"},
    "Swift.Error": set(),
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
    files = sorted(glob.glob(f"{graph_dir}/CoordsCore*.symbols.json"))
    if not files:
        sys.exit(f"doc-coverage: no CoordsCore symbol graphs in {graph_dir} (run scripts/docs.sh first)")
    symbols, relationships = {}, []
    for path in files:
        with open(path) as f:
            graph = json.load(f)
        for symbol in graph["symbols"]:
            symbols[symbol["identifier"]["precise"]] = symbol
        relationships += graph["relationships"]

    # Requirements of our own protocols, by protocol id.
    requirements = {}
    for r in relationships:
        if r["kind"] == "requirementOf" and r["source"] in symbols:
            requirements.setdefault(r["target"], set()).add(symbols[r["source"]]["pathComponents"][-1])
    conformances, parents, implementations = {}, {}, set()
    for r in relationships:
        if r["kind"] == "conformsTo":
            conformances.setdefault(r["source"], set()).add(r["target"])
            conformances[r["source"]].add(r.get("targetFallback", r["target"]))
        elif r["kind"] == "memberOf":
            parents[r["source"]] = r["target"]
        elif r["kind"] == "defaultImplementationOf":
            implementations.add(r["source"])

    def is_witness(precise, name):
        if precise in implementations:
            return True
        for protocol in conformances.get(parents.get(precise), ()):
            if name in requirements.get(protocol, ()) or name in STDLIB_REQUIREMENTS.get(protocol, ()):
                return True
        return False

    missing = []
    for precise, symbol in symbols.items():
        uri = symbol.get("location", {}).get("uri", "")
        if "::SYNTHESIZED::" in precise or "/Sources/CoordsCore/" not in uri:
            continue
        if symbol.get("accessLevel") not in ("public", "open") or symbol.get("docComment"):
            continue
        name = symbol["pathComponents"][-1]
        if is_witness(precise, name):
            continue
        path = uri.split("/Sources/CoordsCore/", 1)[1]
        line = symbol["location"]["position"]["line"] + 1
        missing.append((path, line, symbol["kind"]["displayName"].lower(), ".".join(symbol["pathComponents"])))
    for path, line, kind, name in sorted(missing):
        print(f"Sources/CoordsCore/{path}:{line}: {kind} {name} has no doc comment")
    if missing:
        print(f"doc-coverage: {len(missing)} public declarations of CoordsCore without a doc comment", file=sys.stderr)
        sys.exit(1)
    print(f"doc-coverage: every public declaration of CoordsCore has a doc comment ({len(symbols)} symbols read)")


if __name__ == "__main__":
    main()
