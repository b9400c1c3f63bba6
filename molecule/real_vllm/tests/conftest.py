"""Make molecule/shared/serve_checks.py and tests/sim/http_call.py importable."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "sim"))
