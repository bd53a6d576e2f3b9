import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# `make test-wheel` runs this suite in a venv with the wheel installed (COORDSCORE_INSTALLED=1);
# otherwise the package is imported from the checkout.
if not os.environ.get("COORDSCORE_INSTALLED"):
    sys.path.insert(0, os.path.join(ROOT, "python"))
