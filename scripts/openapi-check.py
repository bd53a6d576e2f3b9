#!/usr/bin/env python3
"""Holds recorded relay responses against docs/openapi.yaml.

Usage: scripts/openapi-check.py RESPONSES.jsonl [--spec docs/openapi.yaml]

RESPONSES.jsonl is written by the Swift relay suites when COORDS_OPENAPI_RECORD names it (make
test-swift does): one {"method", "uri", "status", "headers", "body"} per response. Every
response must be one the spec declares for its operation — status, content type, headers and
body schema (JSON Schema 2020-12, as OpenAPI 3.1 uses) — or, for a path or method the relay does
not serve, a JSON error (404, or 405 with Allow). Every operation of the spec must have been
exercised at least once. Exit status 1 with one line per contradiction.
"""
import argparse
import json
import re
import sys
import urllib.parse

import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_spec
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

BASE = "urn:coords-openapi"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def pointer(*parts):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class Spec:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.doc = yaml.safe_load(f)
        self.registry = Registry().with_resource(BASE, Resource.from_contents(self.doc, default_specification=DRAFT202012))
        self.validators = {}
        self.routes = []  # (regex, template)
        for template in self.doc["paths"]:
            regex = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(regex), template))

    def resolve(self, node, where):
        """Follows a local $ref of a response object; returns (object, its pointer)."""
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            where = ref[1:]
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node, where

    def validator(self, schema_pointer):
        if schema_pointer not in self.validators:
            self.validators[schema_pointer] = Draft202012Validator({"$ref": BASE + "#" + schema_pointer}, registry=self.registry)
        return self.validators[schema_pointer]

    def operation(self, path):
        for regex, template in self.routes:
            if regex.match(path):
                return template
        return None


def operation_key(spec, operation):
    """The operation's id, or — for operations that stand at several paths through a YAML anchor,
    which share one object and no operationId — "METHOD /first/path"."""
    if "operationId" in operation:
        return operation["operationId"]
    for template, item in spec.doc["paths"].items():
        for method in METHODS:
            if item.get(method) is operation:
                return f"{method.upper()} {template}"
    return "?"


def error_problems(spec, record):
    body = json.loads(record["body"])
    return [f"error body: {e.message}" for e in spec.validator("/components/schemas/Error").iter_errors(body)]


def check(spec, record):
    """The contradictions of one recorded response (an empty list when it matches), and its operation."""
    method, status = record["method"].lower(), record["status"]
    headers = {k.lower(): v for k, v in record["headers"].items()}
    path = urllib.parse.urlsplit(record["uri"]).path
    template = spec.operation(path)
    if template is None:
        if status != 404:
            return [f"{status} for a path the spec does not have (404 expected)"], None
        return error_problems(spec, record), None
    item = spec.doc["paths"][template]
    if method not in item:
        if method == "head" and "get" in item:
            return [], None
        if status != 405:
            return [f"{status} for a method {template} does not have (405 expected)"], None
        allowed = {m.strip().lower() for m in headers.get("allow", "").split(",")}
        missing = [m for m in METHODS if m in item and m not in allowed]
        problems = [f"Allow header misses {missing}"] if missing else []
        return problems + error_problems(spec, record), None
    operation = item[method]
    key = operation_key(spec, operation)
    responses = operation["responses"]
    declared = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
    if declared is None:
        return [f"status {status} is not declared (declared: {', '.join(sorted(responses))})"], key
    where = pointer("paths", template, method, "responses", str(status))
    response, where = spec.resolve(declared, where)
    problems = []
    for name, header in (response.get("headers") or {}).items():
        value = headers.get(name.lower())
        if value is not None and header.get("schema", {}).get("type") == "integer" and not re.fullmatch(r"[0-9]+", value):
            problems.append(f"header {name}: {value!r} is not an integer")
    content = response.get("content")
    if not content:
        if record["body"]:
            problems.append(f"a body where the spec declares none ({len(record['body'])} characters)")
        return problems, key
    media = headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in content:
        return problems + [f"content type {media!r} is not declared ({', '.join(content)})"], key
    schema = content[media].get("schema")
    if schema is None:
        return problems, key
    if media == "application/json":
        try:
            body = json.loads(record["body"])
        except ValueError as e:
            return problems + [f"the body is not JSON: {e}"], key
    else:
        body = record["body"]
    validator = spec.validator(where + pointer("content", media, "schema"))
    problems += [f"body{''.join(f'[{p!r}]' for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]
    return problems, key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("responses")
    parser.add_argument("--spec", default="docs/openapi.yaml")
    parser.add_argument("--partial", action="store_true", help="a filtered run: do not require every operation")
    args = parser.parse_args()
    spec = Spec(args.spec)
    validate_spec(spec.doc)  # a valid OpenAPI 3.1 document first (unique operationIds, resolvable refs, …)
    operations = {operation_key(spec, op) for item in spec.doc["paths"].values() for m, op in item.items() if m in METHODS}
    seen, count, failures = set(), 0, []
    with open(args.responses, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            count += 1
            problems, key = check(spec, record)
            if key:
                seen.add(key)
            for problem in problems:
                failures.append(f"{args.responses}:{number}: {record['method']} {record['uri'][:80]} → {record['status']}: {problem}")
    unexercised = [] if args.partial else sorted(operations - seen)
    for op in unexercised:
        failures.append(f"operation {op} was never exercised by the suites")
    for failure in failures[:50]:
        print(f"openapi-check: {failure}", file=sys.stderr)
    if len(failures) > 50:
        print(f"openapi-check: … and {len(failures) - 50} more", file=sys.stderr)
    if count == 0:
        print(f"openapi-check: {args.responses} has no responses; was COORDS_OPENAPI_RECORD set?", file=sys.stderr)
        return 1
    print(f"openapi-check: {count} responses, {len(seen)}/{len(operations)} operations, {len(failures)} contradictions")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
