"""Pure parts of the benchmark: the hand-run baseline script, the PLAY RECAP
parsers, statistics, the targets, the markdown report and the chart (unit-tested
in tests/integration/test_bench_report.py).

    python3 bench/report.py DIR   # DIR/results.md and results.svg again from DIR/results.json
"""

import json
import math
import os
import re
import shlex
import statistics
import sys

# The issues' targets (#37, #58): (label, rule, sizes, limit), each met when its measure is at most limit:
#   tasks      tasks per node (ok + skipped in the recap, mean over the hosts) of the deploy and of the no-op,
#              medians, at every measured size (the largest counts);
#   noop/baseline, deploy/baseline  the ratio of medians at each of sizes that was measured (the largest counts);
#   cpu/node   the deploy's controller CPU seconds (median) divided by the node count, at each of sizes that was
#              measured (the largest counts);
#   plan       seconds of plan.yml on sizes[0] nodes.
TARGETS = (
    ("at most 40 tasks per node, deploy and no-op (every size)", "tasks", (), 40.0),
    ("no-op deploy at most 1.2x the baseline at 4 nodes", "noop/baseline", (4,), 1.2),
    ("no-op deploy at most 1.5x the baseline at 16 nodes", "noop/baseline", (16,), 1.5),
    ("deploy at most 2.0x the baseline at 4 and 8 nodes", "deploy/baseline", (4, 8), 2.0),
    ("controller CPU at most 2.5 CPU-seconds per node per deploy at 8 and 16 nodes", "cpu/node", (8, 16), 2.5),
    ("controller CPU at most 3.5 CPU-seconds per node per deploy at 4 nodes", "cpu/node", (4,), 3.5),
    ("controller CPU at most 4.5 CPU-seconds per node per deploy at 2 nodes", "cpu/node", (2,), 4.5),
    ("plan for 256 nodes within 10 s", "plan", (256,), 10.0),
)
# The runs with Mitogen's strategy (bench.py --mitogen), shown only when measured.
MITOGEN_KINDS = ("deploy_mitogen", "noop_mitogen")
# Every run of deploy.yml: (kind, title).
DEPLOY_KINDS = (("deploy", "deploy"), ("noop", "no-op deploy"),
                ("deploy_mitogen", "deploy, Mitogen"), ("noop_mitogen", "no-op, Mitogen"))
PYACL_SITE_PACKAGES = "/usr/local/Ascend/pyACL/CANN-8.0.RC1/python/site-packages"
RECAP_HOST = re.compile(r"^(\S+)[ \t]+:[ \t]+(ok=\d+(?:[ \t]+[a-z]+=\d+)*)[ \t]*$", re.M)


def recap(output):
    """{host: {counter: value}} from the last PLAY RECAP of ansible-playbook's output
    (`host : ok=N changed=N unreachable=N failed=N skipped=N rescued=N ignored=N`)."""
    parts = output.rsplit("PLAY RECAP", 1)
    if len(parts) != 2:
        raise ValueError("no PLAY RECAP in the output")
    hosts = {host: {name: int(value) for name, value in re.findall(r"([a-z]+)=(\d+)", counters)}
             for host, counters in RECAP_HOST.findall(parts[1])}
    if not hosts:
        raise ValueError("no hosts in the PLAY RECAP")
    return hosts


def changed_tasks(output):
    """{host: changed} for every host of the last PLAY RECAP with changes."""
    return {host: counters["changed"] for host, counters in recap(output).items() if counters.get("changed")}


def tasks_per_node(output):
    """The tasks a host went through (ok + skipped in the last PLAY RECAP), the mean over the hosts."""
    hosts = recap(output)
    return statistics.mean(counters.get("ok", 0) + counters.get("skipped", 0) for counters in hosts.values())


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


def median(table, kind, size):
    """The median of table[kind][size] (samples, CPU seconds or tasks), None when nothing was measured."""
    values = (table or {}).get(kind, {}).get(str(size))
    return statistics.median(values) if values else None


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
            if noop and baseline:
                found.setdefault("noop/baseline@%d" % size, {})[key] = noop / baseline
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


def _sizes(values):
    return ", ".join(str(size) for size in values)


def _worst(measured, sizes):
    """(value, detail) of the largest of MEASURED ({size: value}), naming the SIZES not measured; (None, "")."""
    if not measured:
        return None, ""
    worst = max(measured, key=measured.get)
    detail = "%s %d nodes" % ("at" if len(measured) == 1 else "largest at", worst)
    missing = [size for size in sizes if size not in measured]
    if missing:
        detail += "; %s not measured" % _sizes(missing)
    return measured[worst], detail


def targets(samples, cpu=None, tasks=None):
    """TARGETS against the medians: [(label, value, detail, met)]; value and met are None
    when none of the target's sizes was measured."""
    found = ratios(samples)
    rows = []
    for label, rule, sizes, limit in TARGETS:
        value, detail = None, ""
        if rule in ("noop/baseline", "deploy/baseline"):
            value, detail = _worst(dict((size, found["%s@%d" % (rule, size)]["median"]) for size in sizes
                                        if "%s@%d" % (rule, size) in found), sizes)
        elif rule == "cpu/node":
            value, detail = _worst(dict((int(size), median(cpu, "deploy", size) / int(size))
                                        for size in (cpu or {}).get("deploy", {})
                                        if median(cpu, "deploy", size) is not None and int(size) in sizes), sizes)
        elif rule == "tasks":
            counted = dict(("%s at %s" % (kind, size), median(tasks, kind, size)) for kind in ("deploy", "noop")
                           for size in (tasks or {}).get(kind, {}) if median(tasks, kind, size) is not None)
            if counted:
                worst = max(counted, key=counted.get)
                value, detail = counted[worst], "largest: %s nodes" % worst.replace("noop", "no-op")
        elif rule == "plan":
            value = median(samples, "plan", sizes[0])
        rows.append((label, value, detail, None if value is None else value <= limit))
    return rows


def _floor(cpu, node_cpu, kind, cpus):
    def text(size):
        both = [median(cpu, kind, size), median(node_cpu, kind, size)]
        return "-" if None in both else "%.1f" % (sum(both) / cpus)
    return text


def _table(sizes, columns, left=()):
    """A markdown table with a row per node count; columns: [(title, cell(size))], right-aligned
    but for the titles in left."""
    lines = ["| nodes | %s |" % " | ".join(column[0] for column in columns),
             "|---:|%s|" % "|".join("---" if column[0] in left else "---:" for column in columns)]
    for size in sizes:
        lines.append("| %d | %s |" % (size, " | ".join(column[1](size) for column in columns)))
    return lines


def markdown(meta, samples, cpu=None, tasks=None, node_cpu=None):
    """results.md. cpu, tasks and node_cpu (the controller's CPU seconds, tasks per node, the nodes' CPU seconds) as
    samples: {kind: {size: [value]}}; what was not measured (older results.json files, runs without --mitogen) is
    left out."""
    lines = ["# Deploy benchmark", "",
             "%s, commit %s, %d CPUs, %d repetitions, %d simulated NPUs per node, image %s."
             % (meta["date"], meta["commit"], meta["cpus"], meta["reps"], meta["npus_per_node"], meta["image"]),
             "Written by `bench/run.sh`; seconds of wall time, min / median / max.", ""]
    mitogen = any(samples.get(kind) for kind in MITOGEN_KINDS)
    if mitogen:
        lines += ["The Mitogen columns: deploy.yml and the no-op deploy again on fresh nodes in each repetition,",
                  "with Mitogen%s's strategy `mitogen_linear` (`bench/run.sh --mitogen`)."
                  % (" " + meta["mitogen"] if meta.get("mitogen") else ""), ""]
    kinds = [(kind, title) for kind, title in DEPLOY_KINDS if mitogen or kind not in MITOGEN_KINDS]
    lines += ["![deploy, no-op deploy and baseline against the node count](results.svg)", ""]
    found = ratios(samples)
    sizes = sorted(set(int(size) for kind in ["baseline"] + [pair[0] for pair in kinds]
                       for size in samples.get(kind, {})))

    def cell(kind):
        def text(size):
            values = samples.get(kind, {}).get(str(size))
            if not values:
                return "-"
            s = summary(values)
            return "%.1f / %.1f / %.1f" % (s["min"], s["median"], s["max"])
        return text

    def ratio(name):
        value = found.get(name)
        return "%.2f (min %.2f)" % (value["median"], value["min"]) if value else "-"

    def ratio_at(name):
        return lambda size: ratio(name % size)

    seconds = [("baseline (s)", cell("baseline"))] + [("%s (s)" % title, cell(kind)) for kind, title in kinds]
    lines += _table(sizes, seconds + [("deploy / baseline", ratio_at("deploy/baseline@%d")),
                                      ("no-op / baseline", ratio_at("noop/baseline@%d")),
                                      ("no-op / deploy", ratio_at("noop/deploy@%d"))],
                    left=[column[0] for column in seconds])
    scale = {kind: [name for name in found if name.startswith(kind + "@")] for kind in ("deploy", "baseline")}
    if scale["deploy"]:
        lines += ["", "Scaling from the smallest to the largest cluster: deploy %s, baseline %s."
                  % (ratio(scale["deploy"][0]), ratio(scale["baseline"][0]) if scale["baseline"] else "-")]
    for size in samples.get("plan", {}):
        lines += ["", "`playbooks/plan.yml` on %s nodes (no connection): %s s." % (size, cell("plan")(size))]

    def fixed(table, kind, digits, per_node=False):
        def text(size):
            value = median(table, kind, size)
            return "-" if value is None else "%.*f" % (digits, value / size if per_node else value)
        return text

    if cpu:
        lines += ["", "CPU seconds used on this machine by the command and its children (ssh, ansible-playbook",
                  "and its workers; not the nodes' own processes), medians:", ""]
        lines += _table(sizes, [(title, fixed(cpu, kind, 1)) for kind, title in [("baseline", "baseline")] + kinds])
    if node_cpu:
        lines += ["", "CPU seconds the nodes themselves used meanwhile (every podman container on this machine, by its",
                  "cgroup: Ray, the engine double, the modules and the hardware doubles Ansible runs there), medians; the",
                  "nodes and the controller share this machine's %d CPUs, so (controller + nodes) / CPUs is a floor of the"
                  % meta["cpus"], "wall time:", ""]
        both = [(kind, title) for kind, title in [("baseline", "baseline")] + kinds if node_cpu.get(kind)]
        lines += _table(sizes, [("%s, nodes" % title, fixed(node_cpu, kind, 1)) for kind, title in both]
                        + [("%s, floor (s)" % title, _floor(cpu, node_cpu, kind, meta["cpus"])) for kind, title in both])
    per_node = [("%s CPU (s/node)" % title, fixed(cpu, kind, 2, per_node=True)) for kind, title in kinds
                if (cpu or {}).get(kind)]
    counted = [("%s tasks/node" % title, fixed(tasks, kind, 1)) for kind, title in kinds if (tasks or {}).get(kind)]
    if per_node or counted:
        said = (["those CPU seconds divided by the node count"] if per_node else []) + \
            (["the tasks a host went through (ok + skipped in the run's PLAY RECAP, the mean over the hosts)"]
             if counted else [])
        lines += ["", "Per node, medians: %s:" % ", and ".join(said), ""]
        lines += _table(sizes, per_node + counted)
    lines += ["", "| target | measured (median) | met |", "|---|---:|---|"]
    for label, value, detail, met in targets(samples, cpu, tasks):
        if value is None:
            lines.append("| %s | - | not measured |" % label)
        else:
            lines.append("| %s | %.2f%s | %s |" % (label, value, " (%s)" % detail if detail else "",
                                                   "yes" if met else "no"))
    lines += projection_lines(projection(samples, cpu, tasks))
    lines.append("")
    return "\n".join(lines)


# The projection's controller sizes: cores of the controller, and Ansible forks (ansible.cfg has 20).
PROJECTION_CORES = (2, 8, 16, 32)
PROJECTION_FORKS = (20, 64, 128)


def projection(samples, cpu, tasks, nodes=128, cores=PROJECTION_CORES, forks=PROJECTION_FORKS):
    """A deploy on `nodes` nodes projected from the measured medians (arithmetic, not a run), or None
    without CPU and task counts. Two bounds, the larger one wins:
      CPU:     the controller's CPU seconds per node (largest measured size) x nodes / cores;
      latency: tasks per node x the wall seconds a task took at the smallest measured size (the
               least loaded run) x the rounds of forks each task needs (ceil(nodes / forks)).
    Returns {"nodes", "cpu_per_node", "cpu_total", "tasks", "task_seconds", "from": (small, large),
    "wall": {(cores, forks): seconds}}."""
    measured = sorted(int(size) for size in (cpu or {}).get("deploy", {})
                      if median(cpu, "deploy", size) is not None and median(tasks, "deploy", size)
                      and median(samples, "deploy", size))
    if not measured:
        return None
    small, large = measured[0], measured[-1]
    cpu_per_node = median(cpu, "deploy", large) / large
    cpu_total = cpu_per_node * nodes
    task_count = median(tasks, "deploy", large)
    task_seconds = median(samples, "deploy", small) / median(tasks, "deploy", small)
    wall = {}
    for core_count in cores:
        for fork_count in forks:
            rounds = -(-nodes // fork_count)
            wall[(core_count, fork_count)] = max(cpu_total / core_count, task_count * task_seconds * rounds)
    return {"nodes": nodes, "cpu_per_node": cpu_per_node, "cpu_total": cpu_total, "tasks": task_count,
            "task_seconds": task_seconds, "from": (small, large), "wall": wall}


def projection_lines(found):
    """The projection as markdown (empty without one)."""
    if not found:
        return []
    small, large = found["from"]
    forks = sorted(set(pair[1] for pair in found["wall"]))
    cores = sorted(set(pair[0] for pair in found["wall"]))
    lines = ["", "## Projection to %d nodes (arithmetic from the medians above, not a run)" % found["nodes"], "",
             "The controller spends %.2f CPU-seconds per node per deploy (at %d nodes): %.0f CPU-seconds for %d nodes."
             % (found["cpu_per_node"], large, found["cpu_total"], found["nodes"]),
             "A node goes through %.0f tasks; a task took %.2f s of wall time at %d nodes, the least loaded run."
             % (found["tasks"], found["task_seconds"], small),
             "A deploy then takes at least the larger of: the CPU-seconds over the controller's cores, and the",
             "tasks x that time x the rounds each task needs when the nodes outnumber the forks (ceil(nodes / forks)).",
             "It leaves out what this machine cannot show: nodes with CPUs of their own (here the nodes and the",
             "controller share the same CPUs), the network between them, and the controller's memory per fork.",
             "", "| controller cores | %s |" % " | ".join("forks %d" % fork_count for fork_count in forks),
             "|---:|%s|" % "|".join(["---:"] * len(forks))]
    for core_count in cores:
        cells = ["%.0f s" % found["wall"][(core_count, fork_count)] for fork_count in forks]
        lines.append("| %d | %s |" % (core_count, " | ".join(cells)))
    return lines


# The chart's series: (kind, label, colour); a series without samples is left out.
SERIES = (("deploy", "deploy.yml", "#c0392b"), ("noop", "no-op deploy.yml", "#e67e22"),
          ("baseline", "by hand (baseline)", "#2e86c1"),
          ("deploy_mitogen", "deploy.yml, Mitogen", "#8e44ad"), ("noop_mitogen", "no-op, Mitogen", "#27ae60"))


# Vertical room of one value label: labels of one node count closer than this are moved apart.
LABEL_GAP = 13


def spread(column, gap, bottom):
    """The labels of one node count ([y, value, colour], y where each would sit) moved apart so that no two are
    closer than GAP, the lowest kept above BOTTOM; in order from the top."""
    column = sorted(column, key=lambda label: label[0])
    for above, below in zip(column, column[1:]):
        below[0] = max(below[0], above[0] + gap)
    overflow = column[-1][0] - bottom if column else 0
    if overflow > 0:
        for label in column:
            label[0] -= overflow
    return column


def chart_svg(samples, width=640, height=360):
    """Median seconds of the deploy, the no-op deploy, the baseline (and the Mitogen runs) against the node count, as SVG."""
    kinds = [series[0] for series in SERIES]
    sizes = sorted(set(int(size) for kind in kinds for size in samples.get(kind, {})))
    medians = {kind: {size: statistics.median(samples[kind][str(size)])
                      for size in sizes if samples.get(kind, {}).get(str(size))} for kind in kinds}
    top = max([value for series in medians.values() for value in series.values()] or [1.0])
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000) if top / s <= 8)
    y_max = step * (int(top // step) + 1)
    left, right, upper, lower = 56, 170, 24, 44
    plot_w, plot_h = width - left - right, height - upper - lower

    span = math.log2(sizes[-1] / sizes[0]) if sizes and sizes[-1] > sizes[0] else 0.0

    def x_of(size):
        # log2 of the node count: 2, 4, 8 and 16 nodes are equally far apart.
        if not span:
            return left + plot_w / 2
        return left + plot_w * (0.05 + 0.9 * math.log2(size / sizes[0]) / span)

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
    parts.append('<text x="%.1f" y="%d" text-anchor="middle">nodes (log2 scale)</text>' % (left + plot_w / 2, height - 6))
    drawn = 0
    labels = {}
    for kind, label, colour in SERIES:
        points = [(x_of(size), y_of(value), value) for size, value in sorted(medians[kind].items())]
        if not points:
            continue
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                     % (colour, " ".join("%.1f,%.1f" % point[:2] for point in points)))
        for x, y, value in points:
            parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, colour))
            labels.setdefault(round(x, 1), []).append([y - 7, value, colour])
        legend_y = upper + 16 + 20 * drawn
        drawn += 1
        parts.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                     % (left + plot_w + 16, left + plot_w + 36, legend_y, legend_y, colour))
        parts.append('<text x="%d" y="%d">%s</text>' % (left + plot_w + 42, legend_y + 4, label))
    for x, column in sorted(labels.items()):
        parts += ['<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%.1f</text>' % (x, y, colour, value)
                  for y, value, colour in spread(column, LABEL_GAP, upper + plot_h)]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


class Results:
    """Samples by kind and size, saved as results.json, results.md and results.svg after every step.
    results.json: {"meta", "seconds", "cpu_seconds", "changed", "tasks_per_node", "ratios"}, each
    but meta and ratios {kind: {size: [one value per run]}}; files from before tasks_per_node load too."""

    def __init__(self, out, meta):
        self.out, self.meta = out, meta
        self.samples, self.cpu, self.changed, self.tasks, self.node_cpu = {}, {}, {}, {}, {}

    @classmethod
    def load(cls, out):
        with open(os.path.join(out, "results.json")) as handle:
            data = json.load(handle)
        results = cls(out, data["meta"])
        results.samples, results.cpu = data["seconds"], data.get("cpu_seconds", {})
        results.changed, results.tasks = data.get("changed", {}), data.get("tasks_per_node", {})
        results.node_cpu = data.get("node_cpu_seconds", {})
        return results

    def add(self, size, kind, seconds, cpu, changed=None, tasks=None, node_cpu=None):
        """One run: wall and CPU seconds, {host: changed} and tasks per node from its PLAY RECAP, the nodes' CPU
        seconds."""
        self.samples.setdefault(kind, {}).setdefault(str(size), []).append(round(seconds, 2))
        self.cpu.setdefault(kind, {}).setdefault(str(size), []).append(round(cpu, 2))
        if changed is not None:
            self.changed.setdefault(kind, {}).setdefault(str(size), []).append(changed)
        if tasks is not None:
            self.tasks.setdefault(kind, {}).setdefault(str(size), []).append(round(tasks, 2))
        if node_cpu is not None:
            self.node_cpu.setdefault(kind, {}).setdefault(str(size), []).append(round(node_cpu, 2))

    def save(self):
        with open(os.path.join(self.out, "results.json"), "w") as handle:
            json.dump({"meta": self.meta, "seconds": self.samples, "cpu_seconds": self.cpu, "changed": self.changed,
                       "tasks_per_node": self.tasks, "node_cpu_seconds": self.node_cpu, "ratios": ratios(self.samples)},
                      handle, indent=2, sort_keys=True)
        self.write_report()

    def write_report(self):
        """results.md and results.svg from the samples."""
        with open(os.path.join(self.out, "results.md"), "w") as handle:
            handle.write(markdown(self.meta, self.samples, self.cpu, self.tasks, self.node_cpu))
        with open(os.path.join(self.out, "results.svg"), "w") as handle:
            handle.write(chart_svg(self.samples))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 bench/report.py DIR  (rewrites DIR/results.md and results.svg from DIR/results.json)")
    Results.load(sys.argv[1]).write_report()
