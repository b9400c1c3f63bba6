# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the long waits say while they wait: the Ray barrier (who joined, who is
missing) and the readiness poll (elapsed time, the engine's latest log line).
Used by the ray_barrier and serve_ready action plugins; pure, unit-tested."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# A progress line is cut here: an engine's log line can be a whole traceback frame or a JSON blob.
MAX_LOG_CHARS = 160


def expected_nodes(plan):
    """The planned Ray members in plan order: [{name, ip, npus}] (npus: the node's visible devices)."""
    nodes = plan["nodes"]
    return [{"name": name, "ip": nodes[name]["node_ip"], "npus": len(nodes[name]["visible_devices"])}
            for name in plan["cluster"]["node_order"]]


def barrier_state(probe_stdout, expected):
    """The barrier's view of the probe's JSON (Ray's alive nodes, [{ip, npus}, ...]) against the
    planned nodes ([{name, ip, npus}]).

    Returns nodes_joined, nodes_expected, npus_joined, npus_expected, joined (NPUs by name of the
    planned nodes that joined), missing (names, plan order), short (names with fewer NPUs than
    planned), unexpected (addresses of alive nodes the plan does not hold) and whole: as many alive
    nodes as planned, every planned node among them, no other, and every NPU there.
    """
    alive = json.loads(probe_stdout)
    seen = {}
    for node in alive:
        seen[node["ip"]] = seen.get(node["ip"], 0) + int(node.get("npus") or 0)
    missing = [node["name"] for node in expected if node["ip"] not in seen]
    planned = set(node["ip"] for node in expected)
    unexpected = sorted(ip for ip in seen if ip not in planned)
    short = [node["name"] for node in expected if node["ip"] in seen and seen[node["ip"]] < node["npus"]]
    npus_expected = sum(node["npus"] for node in expected)
    npus_joined = sum(seen.values())
    return {
        "nodes_joined": len(expected) - len(missing),
        "nodes_expected": len(expected),
        "npus_joined": npus_joined,
        "npus_expected": npus_expected,
        "joined": dict((node["name"], seen[node["ip"]]) for node in expected if node["ip"] in seen),
        "missing": missing,
        "short": short,
        "unexpected": unexpected,
        "whole": not missing and not unexpected and len(alive) == len(expected) and npus_joined == npus_expected,
    }


def barrier_status(state=None, error=None):
    """What the barrier sees, e.g. '1/2 nodes, 4/8 NPUs joined; missing: node2'."""
    if state is None:
        return "no answer from the head yet (%s)" % one_line(error or "probe failed")
    line = "%d/%d nodes, %d/%d NPUs joined" % (
        state["nodes_joined"], state["nodes_expected"], state["npus_joined"], state["npus_expected"])
    if state["missing"]:
        line += "; missing: " + ", ".join(state["missing"])
    if state["short"]:
        line += "; fewer NPUs than planned: " + ", ".join(state["short"])
    if state["unexpected"]:
        line += "; not in the plan: " + ", ".join(state["unexpected"])
    return line


def barrier_report(expected, timeout, state=None, error=None, unreachable=None):
    """Why the barrier failed, node by node in plan order: the NPUs each joined node brought (against
    the plan), the nodes that did not join (with why, where the node's own wait for the head said),
    Ray nodes the plan does not hold, and the probe's error."""
    unreachable = unreachable or {}
    joined = (state or {}).get("joined", {})
    lines = ["The Ray cluster is not whole after %d s: expected %d nodes and %d NPUs."
             % (timeout, len(expected), sum(node["npus"] for node in expected))]
    for node in expected:
        if node["name"] in joined:
            status = "%d NPUs (planned %d)" % (joined[node["name"]], node["npus"])
        else:
            reason = unreachable.get(node["name"])
            status = "NOT JOINED" + (" (cannot reach the head: %s)" % one_line(reason) if reason else "")
        lines.append("%s (%s): %s;" % (node["name"], node["ip"], status))
    if state and state["unexpected"]:
        lines.append("Ray nodes the plan does not hold: %s (stop Ray there)." % ", ".join(state["unexpected"]))
    if error:
        lines.append("probe error: %s" % tail(error))
    return "\n".join(lines)


def failed_barrier_report(plan, timeout, failed, checks):
    """The report of a FAILED barrier (ray_barrier's result) made again with why each node that did not join
    cannot reach the head, from CHECKS: {node: the result of its wait for the head's Ray port}."""
    unreachable = dict(failed.get("unreachable") or {})
    unreachable.update(head_check_reasons(dict((node, check) for node, check in (checks or {}).items()
                                               if isinstance(check, dict))))
    return barrier_report(expected_nodes(plan), timeout, failed.get("state"), failed.get("error"), unreachable)


def head_check_reasons(checks):
    """{node: why it cannot reach the head} from {node: the result of its wait for the head's Ray port}:
    wait_for's message where it timed out; nothing for a node that reached the port, skipped the wait, or
    that Ansible could not reach (that is not the head's port)."""
    return dict((node, result["msg"]) for node, result in sorted((checks or {}).items())
                if result and result.get("msg") and result.get("state") is None
                and not (result.get("unreachable") or result.get("skipped")))


def timed(label, elapsed, timeout, status):
    """A progress line: 'Ray cluster, 12 s of 300 s: 1/2 nodes, ...'."""
    return "%s, %d s of %d s: %s" % (label, elapsed, timeout, status)


def last_log_line(journal):
    """The latest non-empty line of a journal excerpt, as a terminal would show it: a progress bar
    redrawn with carriage returns keeps only its last drawing; cut to MAX_LOG_CHARS."""
    for line in reversed((journal or "").split("\n")):
        drawings = [part.strip() for part in line.split("\r") if part.strip()]
        if drawings:
            return cut(drawings[-1])
    return None


def ready_status(answer, log_line):
    """What the readiness poll sees, e.g. '/health: connection refused; engine: Loading safetensors ...'."""
    line = "/health: %s" % one_line(answer)
    if log_line:
        line += "; engine: " + log_line
    return line


def health_answer(result):
    """What a uri result says of /health: 'HTTP 503', or the reason there was no answer."""
    status = result.get("status")
    if isinstance(status, int) and status > 0:
        return "HTTP %d" % status
    msg = result.get("msg") or "no answer"
    # uri's "Status code was -1 and not [200]: Request failed: <url... error [Errno 111] Connection refused>"
    if "Request failed:" in msg:
        msg = msg.split("Request failed:", 1)[1]
    return msg.strip().strip("<>").replace("url" + "open error ", "")


def one_line(text):
    """Text on one line (whitespace runs made one space), cut."""
    return cut(" ".join(str(text).split()))


def tail(text, lines=5):
    """The last lines of a command's error output (a traceback ends in what went wrong)."""
    return "\n".join((text or "").strip().splitlines()[-lines:])


def cut(text):
    return text if len(text) <= MAX_LOG_CHARS else text[:MAX_LOG_CHARS - 3] + "..."


class Throttle(object):
    """Says when to print: at the first call, whenever what is seen (the status, without the clock)
    changes, and every `every` seconds while it stays the same."""

    def __init__(self, every):
        self.every = every
        self.last_status = None
        self.last_time = None

    def due(self, now, status):
        if self.last_time is None or status != self.last_status or now - self.last_time >= self.every:
            self.last_status, self.last_time = status, now
            return True
        return False
