"""One place for each fact, and what two places must spell alike: the unit names (module_utils/runtime/unit_names.py,
the only place in plugins/ that spells one), the unit names the playbooks run without a plan spell, what the
preflight asks for the firewall role."""

import ast
import glob
import os
import re
import sys

import yaml

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names  # noqa: E402
from ansible_collections.ascend.inference.plugins.modules import support_bundle  # noqa: E402

# A unit's name, or the start of one (a pattern, a format): ascend-serve.service, ascend-pd-%s.service, ascend-ray(.
UNIT_TEXT = re.compile(r"ascend-[a-z0-9%*-]*\.service(?!\.j2)|ascend-(serve|ray|watchdog|pd|engine|router|firewall)\b\(")
DOCUMENTED = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def _code_strings(path):
    """(line, text) of every string in PATH's code: not a docstring, not a module's DOCUMENTATION, EXAMPLES or RETURN
    (which must spell the names they document)."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    prose = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and body and isinstance(body[0], ast.Expr):
            prose.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOCUMENTED for t in node.targets):
            prose.add(id(node.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose]


def test_unit_names_are_spelled_in_the_registry_only():
    registry = os.path.join(REPO, "plugins", "module_utils", "runtime", "unit_names.py")
    found = ["%s:%d: %r" % (os.path.relpath(path, REPO), line, text)
             for path in sorted(glob.glob(os.path.join(REPO, "plugins", "**", "*.py"), recursive=True))
             if path != registry for line, text in _code_strings(path) if UNIT_TEXT.search(text)]
    assert not found, "unit names spelled outside module_utils/runtime/unit_names.py:\n" + "\n".join(found)


def test_the_scan_finds_a_unit_name_spelled_twice(tmp_path):
    # The check above, on a file that spells one in its code and others where it may.
    path = tmp_path / "phase.py"
    path.write_text('"""Writes ascend-serve.service."""\nDOCUMENTATION = "ascend-ray.service"\n'
                    'UNIT = "ascend-serve-%s.service"\nTEMPLATE = "serve/ascend-serve.service.j2"\n')
    assert [text for _line, text in _code_strings(str(path)) if UNIT_TEXT.search(text)] == ["ascend-serve-%s.service"]


def test_teardown_stops_the_plans_units_serve_first():
    # teardown.yml must work with an inventory that no longer validates, so its phase cannot read the plan.
    from ansible_collections.ascend.inference.plugins.plugin_utils.operations import teardown

    class NoPlan(object):
        """A node whose plan cannot be read; its unit directory lists no instance's unit."""

        @property
        def plan(self):
            raise AssertionError("teardown read the plan")

        @staticmethod
        def run(module, args):
            return {"files": []}

    state = teardown.desired(NoPlan(), {})["apply"]
    # Given in start order: node_apply stops them in reverse, the router in front of serve first (serve's watchdog
    # before the serve it would restart), the NPU exporter after the engines.
    assert [unit["name"] for unit in reversed(state["units"])] == [unit_names.ROUTER] + [
        unit_names.SINGLE[job] for job in ("watchdog", "serve", "engine", "ray")] + [unit_names.NPU_EXPORTER,
                                                                                     unit_names.FIREWALL]


def test_the_support_bundle_reads_the_plans_host_units():
    # collect.yml needs no plan either: the module's default lists the host units.
    spec = yaml.safe_load(support_bundle.DOCUMENTATION)["options"]["units"]
    assert spec["default"] == [unit_names.SINGLE[job] for job in ("ray", "serve", "firewall")]
    assert yaml.safe_load(support_bundle.DOCUMENTATION)["options"]["unit_dir"]["default"] == unit_names.UNIT_DIR


def test_the_ray_probe_defaults_to_the_plans_ray_unit():
    # cluster_nodes.py is run by hand too, without the unit the roles pass.
    with open(os.path.join(REPO, "roles", "ray_cluster", "files", "cluster_nodes.py")) as handle:
        assert 'else "%s"' % unit_names.RAY in handle.read()


def test_node_env_restarts_the_plans_units_by_default():
    # The role's default names the units that load node.env: the single model's Ray, serve and engine container.
    expected = [unit_names.SINGLE[job] for job in ("ray", "serve", "engine")]
    with open(os.path.join(REPO, "roles", "node_env", "defaults", "main.yml")) as handle:
        assert yaml.safe_load(handle)["node_env_services"] == expected
    with open(os.path.join(REPO, "roles", "node_env", "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert options["node_env_services"]["default"] == expected


def test_the_engines_documented_are_the_release_tables():
    # ascend_engine in the plan role's spec and parallel_plan's engine option; both describe ascend_engine_version
    # with every shipped vLLM table and each engine's default release (module_utils/engines/releases.py).
    from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
    from ansible_collections.ascend.inference.plugins.modules import parallel_plan
    with open(os.path.join(REPO, "roles", "plan", "meta", "argument_specs.yml")) as handle:
        spec = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    module = yaml.safe_load(parallel_plan.DOCUMENTATION)["options"]
    for engine, version in ((spec["ascend_engine"], spec["ascend_engine_version"]),
                            (module["engine"], module["engine_version"])):
        assert sorted(engine["choices"]) == sorted(releases.ENGINES)
        prose = " ".join(version["description"])
        for vllm in releases.VLLM_RELEASES:
            assert re.search(r"(?<![\d.])%s(?!\d)" % re.escape(vllm), prose), vllm
        for default in releases.DEFAULT_ENGINE_VERSIONS.values():
            assert default in prose, default
