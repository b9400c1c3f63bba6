"""Write what one vLLM release's ``KVTransferConfig`` accepts (tests/unit/plugins/module_utils/engines/fixtures/
kv_transfer_config/vllm-X.Y.Z.json), read from the wheel's source without importing vLLM:

    python tools/extract_kv_transfer_config.py --wheel vllm-0.23.0-...whl --out FIXTURE.json

The planner writes ``--kv-transfer-config`` for prefill and decode pools; the tests check that JSON against these
fields (names, annotations, defaults), the ``kv_role`` values vLLM accepts, whether unknown keys are refused (the
``@config`` decorator's ``extra="forbid"`` from vLLM 0.11's successors), and the ValueError messages of its
``__post_init__``. Download a wheel with ``pip download --no-deps vllm==X.Y.Z``.
"""
import argparse
import ast
import hashlib
import json
import os
import zipfile

# Where the class lives: vllm/config.py up to 0.10, vllm/config/kv_transfer.py since.
SOURCES = ("vllm/config/kv_transfer.py", "vllm/config.py")


def _literal_values(node, aliases):
    """The strings of a Literal[...] annotation, following module-level aliases (KVRole = Literal[...])."""
    if isinstance(node, ast.Name) and node.id in aliases:
        return _literal_values(aliases[node.id], aliases)
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        values = []
        for item in items:
            if isinstance(item, ast.Constant):
                values.append(item.value)
            else:
                values.extend(v for v in _literal_values(item, aliases) if v not in values)
        return values
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Optional":
        return _literal_values(node.slice, aliases)
    if isinstance(node, ast.BinOp):  # KVRole | None
        return _literal_values(node.left, aliases) + _literal_values(node.right, aliases)
    return []


def _default(node):
    if node is None:
        return {"required": True}
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for keyword in node.keywords:
            if keyword.arg == "default_factory":
                return {"factory": ast.unparse(keyword.value)}
            if keyword.arg == "default":
                return _default(keyword.value)
    try:
        return {"value": ast.literal_eval(node)}
    except ValueError:
        return {"source": ast.unparse(node)}


def extract(source, forbids_extra):
    tree = ast.parse(source)
    aliases = dict((n.targets[0].id, n.value) for n in tree.body
                   if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "KVTransferConfig")
    fields, checks, kv_role = {}, [], []
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            fields[item.target.id] = dict(annotation=ast.unparse(item.annotation), **_default(item.value))
            if item.target.id == "kv_role":
                kv_role = _literal_values(item.annotation, aliases)
        if isinstance(item, ast.FunctionDef) and item.name == "__post_init__":
            for raise_node in (n for n in ast.walk(item) if isinstance(n, ast.Raise) and n.exc is not None):
                checks.append(ast.unparse(raise_node.exc))
    return {"fields": fields, "kv_role": kv_role, "forbids_extra": forbids_extra, "post_init_raises": checks}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.wheel, "rb") as handle:
        sha256 = hashlib.sha256(handle.read()).hexdigest()
    with zipfile.ZipFile(args.wheel) as wheel:
        names = set(wheel.namelist())
        path = next(p for p in SOURCES if p in names and b"class KVTransferConfig" in wheel.read(p))
        source = wheel.read(path).decode()
        utils = wheel.read("vllm/config/utils.py").decode() if "vllm/config/utils.py" in names else ""
        version = next(n for n in names if n.endswith(".dist-info/METADATA")).split("-")[1].split(".dist")[0]
    # vLLM's @config: ConfigDict(extra="forbid") makes pydantic refuse unknown keys.
    found = extract(source, 'extra="forbid"' in utils)
    out = dict({"vllm_version": version, "wheel": os.path.basename(args.wheel), "wheel_sha256": sha256,
                "source": path}, **found)
    with open(args.out, "w") as handle:
        json.dump(out, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
