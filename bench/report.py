"""Pure parts of the benchmark: the hand-run baseline script, the recap
parser, statistics and the markdown report (unit-tested in tests/unit)."""

import json
import os
import re
import shlex
import statistics

# The targets: (label, ratio name, limit).
TARGETS = (
    ("deploy within 1.3x of the baseline on 4 nodes", "deploy/baseline@4", 1.3),
    ("no-op run within 20% of the deploy (every size)", "noop/deploy@max", 0.2),
    ("8 nodes within 1.25x of 2 nodes", "deploy@8/deploy@2", 1.25),
    ("plan for 256 nodes within 10 s", "plan@256", 10.0),
)
PYACL_SITE_PACKAGES = "/usr/local/Ascend/pyACL/CANN-8.0.RC1/python/site-packages"
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def changed_tasks(output):
    """{host: changed} for every host of the last PLAY RECAP with changes."""
    recap = output.rsplit("PLAY RECAP", 1)
    if len(recap) != 2:
        raise ValueError("no PLAY RECAP in the output")
    hosts = RECAP.findall(recap[1])
    if not hosts:
        raise ValueError("no hosts in the PLAY RECAP")
    return {match[0]: int(match[1]) for match in hosts if int(match[1])}


def _exports(node, nic):
    env = {name: (nic if value is None else value) for name, value in sorted(node["env"].items())}
    lines = ["source /usr/local/Ascend/ascend-toolkit/set_env.sh",
             "export PATH=/opt/ascend-inference/venv/bin:$PATH",
             "export PYTHONPATH=%s:$PYTHONPATH" % PYACL_SITE_PACKAGES]
    return "\n".join(lines + ["export %s=%s" % (name, shlex.quote(value)) for name, value in env.items()])


def baseline_script(plans, nic, ssh_options):
    """The seeds' steps for a Ray cluster as a person runs them over SSH (the
    transport Ansible uses), with one master connection per node as Ansible has.
    The script's first argument is the directory for those connections."""
    cluster = next(iter(plans.values()))["cluster"]
    head = cluster["head"]
    ip = {name: plans[name]["node_ip"] for name in cluster["node_order"]}
    workers = [name for name in cluster["node_order"] if name != head]
    options = ssh_options + ["-o", "ControlMaster=auto", "-o", "ControlPersist=60s"]
    lines = [
        "#!/usr/bin/env bash",
        "# The hand-run baseline (written by bench/bench.py): the seed documents' steps",
        "# for %d nodes over SSH. Usage: bash THIS_FILE CONTROL_DIR" % len(plans),
        "set -euo pipefail",
        "on() { ssh %s -o ControlPath=\"$1/%%C\" \"root@$2\" \"${@:3}\"; }" % " ".join(map(shlex.quote, options)),
        "",
        "# 1. The environment on every node (in parallel): CANN, pyACL, the seeds' exports.",
    ]
    for name in cluster["node_order"]:
        lines.append("on \"$1\" %s 'cat > /root/ascend-env.sh' <<'ENV' &\n%s\nENV"
                     % (ip[name], _exports(plans[name], nic)))
    lines += ["wait", "", "# 2. The Ray head."]

    def ray_start(name):
        argv = [arg for arg in plans[name]["ray_start_argv"] if arg != "--block"]
        return shlex.quote("source /root/ascend-env.sh && " + " ".join(map(shlex.quote, argv)))

    lines.append("on \"$1\" %s %s" % (ip[head], ray_start(head)))
    lines += ["", "# 3. The workers, in parallel."]
    lines += ["on \"$1\" %s %s &" % (ip[name], ray_start(name)) for name in workers]
    lines += ["wait", "", "# 4. serve on the head, in the background."]
    serve = "source /root/ascend-env.sh && exec " + " ".join(map(shlex.quote, plans[head]["serve_argv"]))
    serve = "nohup bash -c %s > /root/serve.log 2>&1 < /dev/null &" % shlex.quote(serve)
    lines.append("on \"$1\" %s %s" % (ip[head], shlex.quote(serve)))
    lines += ["", "# 5. Wait for /health (every second, for at most 10 minutes)."]
    lines.append("for _ in $(seq 600); do curl -sf -o /dev/null http://%s:%d/health && exit 0; sleep 1; done"
                 % (ip[head], cluster["api_port"]))
    lines += ["echo 'serve did not become healthy' >&2", "exit 1", ""]
    return "\n".join(lines)


def summary(values):
    return {"n": len(values), "min": min(values), "median": statistics.median(values), "max": max(values)}


def ratios(samples):
    """Ratios of medians (and of minima): the figures the targets are about."""
    def stat(kind, size, key):
        values = samples.get(kind, {}).get(str(size))
        return summary(values)[key] if values else None

    sizes = sorted(int(size) for size in samples.get("deploy", {}))
    found = {}
    for key in ("median", "min"):
        for size in sizes:
            deploy, baseline, noop = stat("deploy", size, key), stat("baseline", size, key), stat("noop", size, key)
            if baseline:
                found.setdefault("deploy/baseline@%d" % size, {})[key] = deploy / baseline
            if noop:
                found.setdefault("noop/deploy@%d" % size, {})[key] = noop / deploy
        if len(sizes) > 1:
            for kind in ("deploy", "baseline"):
                if stat(kind, sizes[0], key) and stat(kind, sizes[-1], key):
                    found.setdefault("%s@%d/%s@%d" % (kind, sizes[-1], kind, sizes[0]), {})[key] = \
                        stat(kind, sizes[-1], key) / stat(kind, sizes[0], key)
    noop = [found[name] for name in found if name.startswith("noop/deploy@")]
    if noop:
        found["noop/deploy@max"] = {key: max(item[key] for item in noop) for key in ("median", "min")}
    for size in samples.get("plan", {}):
        found["plan@%s" % size] = {key: stat("plan", size, key) for key in ("median", "min")}
    return found


def markdown(meta, samples, cpu=None):
    lines = ["# Deploy benchmark", "",
             "%s, commit %s, %d CPUs, %d repetitions, %d simulated NPUs per node, image %s."
             % (meta["date"], meta["commit"], meta["cpus"], meta["reps"], meta["npus_per_node"], meta["image"]),
             "Written by `bench/run.sh`; seconds of wall time, min / median / max.", "",
             "![deploy, no-op deploy and baseline against the node count](results.svg)", "",
             "| nodes | baseline (s) | deploy (s) | no-op deploy (s) | deploy / baseline | no-op / deploy |",
             "|---:|---|---|---|---:|---:|"]
    found = ratios(samples)

    def cell(kind, size):
        values = samples.get(kind, {}).get(str(size))
        if not values:
            return "-"
        s = summary(values)
        return "%.1f / %.1f / %.1f" % (s["min"], s["median"], s["max"])

    def ratio(name):
        value = found.get(name)
        return "%.2f (min %.2f)" % (value["median"], value["min"]) if value else "-"

    for size in sorted(int(size) for size in samples.get("deploy", {})):
        lines.append("| %d | %s | %s | %s | %s | %s |" % (
            size, cell("baseline", size), cell("deploy", size), cell("noop", size),
            ratio("deploy/baseline@%d" % size), ratio("noop/deploy@%d" % size)))
    scale = {kind: [name for name in found if name.startswith(kind + "@")] for kind in ("deploy", "baseline")}
    if scale["deploy"]:
        lines += ["", "Scaling from the smallest to the largest cluster: deploy %s, baseline %s."
                  % (ratio(scale["deploy"][0]), ratio(scale["baseline"][0]) if scale["baseline"] else "-")]
    for size in samples.get("plan", {}):
        lines += ["", "`playbooks/plan.yml` on %s nodes (no connection): %s s." % (size, cell("plan", size))]
    if cpu:
        lines += ["", "CPU seconds used on this machine by the command and its children (ssh, ansible-playbook",
                  "and its workers; not the nodes' own processes), medians:", "",
                  "| nodes | baseline | deploy | no-op deploy |", "|---:|---:|---:|---:|"]
        for size in sorted(int(size) for size in cpu.get("deploy", {})):
            lines.append("| %d | %s |" % (size, " | ".join(
                "%.1f" % statistics.median(cpu[kind][str(size)]) if cpu.get(kind, {}).get(str(size)) else "-"
                for kind in ("baseline", "deploy", "noop"))))
    lines += ["", "| target | measured (median) | met |", "|---|---:|---|"]
    for label, name, limit in TARGETS:
        value = found.get(name)
        if value is None:
            lines.append("| %s | not measured | - |" % label)
        else:
            lines.append("| %s | %.2f | %s |" % (label, value["median"], "yes" if value["median"] <= limit else "no"))
    lines.append("")
    return "\n".join(lines)


# The chart's series: (kind, label, colour).
SERIES = (("deploy", "deploy.yml", "#c0392b"), ("noop", "no-op deploy.yml", "#e67e22"),
          ("baseline", "by hand (baseline)", "#2e86c1"))


def chart_svg(samples, width=640, height=360):
    """Median seconds of the deploy, the no-op deploy and the baseline against the node count, as SVG."""
    kinds = [series[0] for series in SERIES]
    sizes = sorted(set(int(size) for kind in kinds for size in samples.get(kind, {})))
    medians = {kind: {size: statistics.median(samples[kind][str(size)])
                      for size in sizes if samples.get(kind, {}).get(str(size))} for kind in kinds}
    top = max([value for series in medians.values() for value in series.values()] or [1.0])
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000) if top / s <= 8)
    y_max = step * (int(top // step) + 1)
    left, right, upper, lower = 56, 170, 24, 44
    plot_w, plot_h = width - left - right, height - upper - lower

    def x_of(size):
        return left + (plot_w * (sizes.index(size) + 0.5) / len(sizes))

    def y_of(value):
        return upper + plot_h * (1 - value / y_max)

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
             'font-size="12">' % (width, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="16" font-weight="bold">Wall time (median seconds) against the node count</text>' % left]
    for tick in range(0, int(y_max) + 1, step):
        y = y_of(tick)
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, left + plot_w, y, y))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%d</text>' % (left - 6, y + 4, tick))
    for size in sizes:
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x_of(size), upper + plot_h + 18, size))
    parts.append('<text x="%.1f" y="%d" text-anchor="middle">nodes (one step each, not to scale)</text>' % (left + plot_w / 2, height - 6))
    for index, (kind, label, colour) in enumerate(SERIES):
        points = [(x_of(size), y_of(value), value) for size, value in sorted(medians[kind].items())]
        if not points:
            continue
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                     % (colour, " ".join("%.1f,%.1f" % point[:2] for point in points)))
        for x, y, value in points:
            parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, colour))
            parts.append('<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%.1f</text>' % (x, y - 7, colour, value))
        legend_y = upper + 16 + 20 * index
        parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                     % (left + plot_w + 16, left + plot_w + 36, legend_y, legend_y, colour))
        parts.append('<text x="%d" y="%d">%s</text>' % (left + plot_w + 42, legend_y + 4, label))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


class Results:
    """Samples by kind and size, saved as results.json and results.md after every step."""

    def __init__(self, out, meta):
        self.out, self.meta, self.samples, self.cpu, self.changed = out, meta, {}, {}, {}

    def add(self, size, kind, seconds, cpu, changed=None):
        self.samples.setdefault(kind, {}).setdefault(str(size), []).append(round(seconds, 2))
        self.cpu.setdefault(kind, {}).setdefault(str(size), []).append(round(cpu, 2))
        if changed is not None:
            self.changed.setdefault(kind, {}).setdefault(str(size), []).append(changed)

    def save(self):
        with open(os.path.join(self.out, "results.json"), "w") as handle:
            json.dump({"meta": self.meta, "seconds": self.samples, "cpu_seconds": self.cpu, "changed": self.changed,
                       "ratios": ratios(self.samples)}, handle, indent=2, sort_keys=True)
        with open(os.path.join(self.out, "results.md"), "w") as handle:
            handle.write(markdown(self.meta, self.samples, self.cpu))
        with open(os.path.join(self.out, "results.svg"), "w") as handle:
            handle.write(chart_svg(self.samples))
