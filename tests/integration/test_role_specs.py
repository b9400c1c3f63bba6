"""Each role's defaults and its argument spec agree (as prometheus.prometheus checks): every default has
a spec in the role's main entry point, with a description and the same default; a default computed from
another variable must fall back to the spec's value."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.module_utils.plan import planner  # noqa: E402

ROLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "roles", "*")) if os.path.isdir(p))
# "{{ other | default('X') }}": the spec documents X, what the role gets when `other` is unset too.
FALLBACK = re.compile(r"^\{\{\s*\w+\s*\|\s*default\((['\"])(.*)\1\)\s*\}\}$")
# "{{ ascend_plan.cluster.KEY }}" (inside a longer default too): the spec documents the plan's value for an
# inventory that leaves the path variables (ascend_config_dir, ascend_python_env) unset.
PLAN_VALUE = re.compile(r"\{\{\s*ascend_plan\.cluster\.(\w+)\s*\}\}")
PLAN_DEFAULTS = dict(planner.config_paths(planner.CONFIG_DIR), python_env=planner.PYTHON_ENV)


def documented(value):
    """What the spec's default must say for a defaults/main.yml value."""
    if not isinstance(value, str):
        return value
    fallback = FALLBACK.match(value)
    if fallback:
        return fallback.group(2)
    return PLAN_VALUE.sub(lambda found: PLAN_DEFAULTS[found.group(1)], value)


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
                expected = documented(value)
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
    assert documented("{{ serve_python_env | default('/opt/ascend-inference/venv') }}") == "/opt/ascend-inference/venv"
    assert documented("{{ ascend_plan.cluster.config_dir }}/secrets.env") == "/etc/ascend-inference/secrets.env"
    assert documented("{{ ascend_plan.cluster.python_env }}") == "/opt/ascend-inference/venv"
    assert not FALLBACK.match("{{ a ~ b }}")


@pytest.mark.parametrize("role", ROLES)
def test_entry_points_mean_what_main_means(role):
    """An option another entry point shares with main has main's type and default (docs/variables.md lists it once)."""
    specs = load(role, "meta", "argument_specs.yml")["argument_specs"]
    main = specs["main"].get("options") or {}
    problems = ["%s %s: %s %r, main %r" % (entry, name, key, option.get(key), main[name].get(key))
                for entry, spec in specs.items() if entry != "main"
                for name, option in (spec.get("options") or {}).items() if name in main
                for key in ("type", "default", "elements", "choices") if option.get(key) != main[name].get(key)]
    assert not problems, "\n".join(problems)


def role_docs(*args):
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "role_docs.py")] + list(args),
                          capture_output=True, text=True, check=False)


def test_the_variable_tables_of_docs_are_rendered_from_the_specs():
    proc = role_docs("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def copy_with_serve_spec(tmp_path, old, new):
    """The rendered pages and every role's specs in tmp_path, with one edit in the serve role's spec."""
    (tmp_path / "docs").mkdir()
    for page in ("layouts.md", "variables.md"):
        shutil.copy(os.path.join(REPO, "docs", page), tmp_path / "docs")
    for role in ROLES:
        shutil.copytree(os.path.join(REPO, "roles", role, "meta"), tmp_path / "roles" / role / "meta")
    spec = tmp_path / "roles" / "serve" / "meta" / "argument_specs.yml"
    spec.write_text(spec.read_text().replace(old, new, 1))


def test_a_spec_change_not_rendered_into_the_pages_is_caught(tmp_path):
    copy_with_serve_spec(tmp_path, "default: 1800", "default: 2400")
    proc = role_docs("--check", "--repo", str(tmp_path))
    assert proc.returncode == 1
    assert "+| `serve_ready_timeout` | int | `2400` |" in proc.stdout, proc.stdout
    assert "run make docs" in proc.stderr
    # Without --check it rewrites the page, after which the check passes.
    assert role_docs("--repo", str(tmp_path)).returncode == 0
    assert role_docs("--check", "--repo", str(tmp_path)).returncode == 0


def test_markup_the_renderer_does_not_know_stops_it(tmp_path):
    copy_with_serve_spec(tmp_path, "description: Seconds systemd waits", "description: C(O(serve_restart_sec)) Seconds")
    proc = role_docs("--check", "--repo", str(tmp_path))
    assert proc.returncode != 0 and "cannot render this markup" in proc.stderr, proc.stderr
