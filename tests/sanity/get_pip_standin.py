"""Stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test downloads get-pip.py from a host the build machines cannot reach
and runs it, with pip's install arguments, inside each empty virtual
environment it creates. This does the same job offline: the standard
library's ensurepip, then the pip wheel that tests/run.sh downloaded from
PyPI into pip-wheels/ beside this file.
"""
import ensurepip
import os
import subprocess
import sys

WHEELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip-wheels")
ARGS = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]

ensurepip.bootstrap(upgrade=True)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--no-index", "--find-links", WHEELS] + ARGS))
