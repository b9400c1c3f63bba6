"""Each role's defaults and its argument spec agree (as prometheus.prometheus checks): every default has
a spec in the role's main entry point, with a description and the same default; a default computed from
another variable must fall back to the spec's value."""

import glob
import os
import re

import pytest
import yaml

from conftest import REPO

ROLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "roles", "*")) if os.path.isdir(p))
# "{{ other | default('X') }}": the spec documents X, what the role gets when `other` is unset too.
FALLBACK = re.compile(r"^\{\{\s*\w+\s*\|\s*default\((['\"])(.*)\1\)\s*\}\}$")


def load(role, *path):
    full = os.path.join(REPO, "roles", role, *path)
    if not os.path.exists(full):
        return None
    with open(full, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("role", ROLES)
def test_defaults_and_argument_specs_agree(role):
    defaults = load(role, "defaults", "main.yml") or {}
    specs = load(role, "meta", "argument_specs.yml")
    assert specs and "main" in specs["argument_specs"], "%s: no meta/argument_specs.yml with a main entry point" % role
    problems = []
    for entry, spec in specs["argument_specs"].items():
        options = spec.get("options") or {}
        for name, option in options.items():
            if not option.get("description"):
                problems.append("%s %s: no description" % (entry, name))
            if name in defaults and "default" in option:
                value = defaults[name]
                fallback = FALLBACK.match(value) if isinstance(value, str) else None
                expected = fallback.group(2) if fallback else value
                if option["default"] != expected:
                    problems.append("%s %s: spec default %r, defaults/main.yml %r"
                                    % (entry, name, option["default"], value))
            if name in defaults and "default" not in option and not option.get("required"):
                problems.append("%s %s: defaults/main.yml sets %r, the spec gives no default"
                                % (entry, name, defaults[name]))
    main = specs["argument_specs"]["main"].get("options") or {}
    problems += ["main: %s is in defaults/main.yml but not in the spec" % name for name in defaults if name not in main]
    assert not problems, "%s:\n  %s" % (role, "\n  ".join(problems))


def test_the_check_sees_a_disagreement():
    assert FALLBACK.match("{{ serve_python_env | default('/opt/ascend-inference/venv') }}").group(2) == \
        "/opt/ascend-inference/venv"
    assert not FALLBACK.match("{{ a ~ b }}")
