"""Write the Prometheus metrics one vLLM release defines (tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/
vllm-X.Y.Z.json), read from the wheel's vllm/v1/metrics/loggers.py without importing vLLM:

    python tools/extract_vllm_metrics.py --wheel vllm-0.23.0-...whl --out FIXTURE.json

For every Gauge, Counter and Histogram the PrometheusStatLogger creates: its name, type, help text, label names,
a histogram's buckets, and the conditions it is created under (``if self.show_hidden_metrics:`` marks a metric vLLM hides unless
``--show-hidden-metrics-for-version`` asks for it). The collection's recording rules, alert rules and dashboard
are checked against these names, and the serve double exports them. Download a wheel with
``pip download --no-deps vllm==X.Y.Z``.
"""
import argparse
import ast
import hashlib
import json
import os
import zipfile

SOURCE = "vllm/v1/metrics/loggers.py"
TYPES = {"Gauge": "gauge", "Counter": "counter", "Histogram": "histogram",
         "_gauge_cls": "gauge", "_counter_cls": "counter", "_histogram_cls": "histogram"}
HIDDEN = "show_hidden_metrics"


def _kind(call):
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return TYPES.get(name)


def _text(node):
    """A string argument: a literal, an implicit concatenation, or (f-strings, variables) its source."""
    try:
        value = ast.literal_eval(node)
        return value if isinstance(value, str) else ast.unparse(node)
    except ValueError:
        return ast.unparse(node)


def _labels(node, assigned):
    """Label names: a literal list, a variable assigned a list in the same function, or list + list."""
    if isinstance(node, ast.Name) and node.id in assigned:
        return _labels(assigned[node.id], assigned)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_text(item) for item in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _labels(node.left, assigned) + _labels(node.right, assigned)
    return [ast.unparse(node)]


def _buckets(node, assigned):
    """Histogram bucket bounds: a literal list, or a variable assigned one; else the expression's source."""
    if isinstance(node, ast.Name) and node.id in assigned:
        return _buckets(assigned[node.id], assigned)
    try:
        return [float(value) for value in ast.literal_eval(node)]
    except (ValueError, TypeError):
        return ast.unparse(node)


def _walk(node, conditions, assigned, found):
    if isinstance(node, ast.FunctionDef):
        assigned = dict(assigned)
        for item in ast.walk(node):
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                assigned.setdefault(item.targets[0].id, item.value)
    if isinstance(node, ast.Call) and _kind(node):
        keywords = dict((k.arg, k.value) for k in node.keywords if k.arg)
        name = keywords.get("name", node.args[0] if node.args else None)
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.startswith("vllm:"):
            entry = {"type": _kind(node), "documentation": _text(keywords.get("documentation", ast.Constant(""))),
                     "labelnames": _labels(keywords["labelnames"], assigned) if "labelnames" in keywords else [],
                     "conditions": list(conditions), "hidden": any(HIDDEN in c for c in conditions)}
            if "buckets" in keywords:
                entry["buckets"] = _buckets(keywords["buckets"], assigned)
            found.setdefault(name.value, entry)
    if isinstance(node, ast.If):
        test = ast.unparse(node.test)
        for child in node.body:
            _walk(child, conditions + [test], assigned, found)
        for child in node.orelse:
            _walk(child, conditions + ["not (%s)" % test], assigned, found)
        return
    for child in ast.iter_child_nodes(node):
        _walk(child, conditions, assigned, found)


def extract(source):
    """{metric name: {type, documentation, labelnames, conditions, hidden}} of SOURCE."""
    found = {}
    _walk(ast.parse(source), [], {}, found)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.wheel, "rb") as handle:
        sha256 = hashlib.sha256(handle.read()).hexdigest()
    with zipfile.ZipFile(args.wheel) as wheel:
        source = wheel.read(SOURCE).decode()
        version = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")).split("-")[1]
    out = {"vllm_version": version.split(".dist")[0], "wheel": os.path.basename(args.wheel), "wheel_sha256": sha256,
           "source": SOURCE, "metrics": extract(source)}
    with open(args.out, "w") as handle:
        json.dump(out, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
