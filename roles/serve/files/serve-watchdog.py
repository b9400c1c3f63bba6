# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Watchdog of one serve unit of an mp data-parallel group that spans nodes (installed by ascend.inference).

vLLM's handshake between the API server (head) and the --headless nodes exists at start-up only (vLLM 0.11
and 0.23, v1/engine/utils.py and v1/engine/core.py); nothing in vLLM puts a group back together:
- a headless node restarted later never joins the running head, and the head's /health keeps answering 200;
  a request routed to the lost ranks never answers (0.23, dense model) or takes the head down (lock-step DP);
- a restarted head waits for every headless node, while the old ones wait for a front-end that is gone.

So, every INTERVAL seconds:
- head: once its /health answers, a 1-token completion to every DP rank (vLLM 0.23 and later route the
  X-data-parallel-rank header to that rank; before, one completion reaches every rank's lock-step wave). A rank
  that gives no answer within PROBE_TIMEOUT (an HTTP error is an answer: the front-end is there) fails the round,
  unless the engine has requests waiting (a busy engine answers late). FAILURES failed rounds in a row restart the
  head's serve unit: its start-up handshake takes every node again. After GIVE_UP restarts with no round answered
  in between, it stops restarting and says so (status.yml shows it).
- headless node: GET the head's /health. When the head was seen up while this node's engines ran, is then down
  FAILURES polls in a row, and none of the TCP connections this node's serve held to the head while it was up is
  still open (a head whose processes live on, busy or hung, keeps them) or the head has been down longer than
  GRACE (a start-up's longest wait: a head that lost power leaves its connections open on this side), this node's
  serve unit restarts once (its engines belong to the head that went away); not again until the head has been up.
  A connection opened since (vLLM's ZMQ sockets reconnect to a restarted head by themselves) does not hold: a real
  vLLM 0.32 headless rank whose handshake went to an earlier head never joins a later start-up; it waits out its
  5-minute handshake timeout ("Did not receive response from front-end process") and exits.

"""

import json
import os
import http.client
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# Names the probes in proxies' and servers' logs.
USER_AGENT = "ascend-serve-watchdog"
# Restarts of the head with no round answered in between, after which the watchdog stops restarting.
GIVE_UP = 3
# Where the system's own programs are: the service's environment (serve.env) puts the engine's bin/ first on PATH.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def decide(config, state, seen):
    """One round: SEEN is {"now", "serve_started" (epoch seconds, None when the unit is not active), "healthy",
    "unanswered" (head: the ranks that gave no answer), "waiting" (head: requests waiting in the engine, or None),
    "connections" (headless node: its serve's TCP connections to the head)}. Returns (state, restart, message)."""
    state = dict(state)
    failures = config["failures"]
    if config["role"] == "head":
        if seen["serve_started"] is None or not seen["healthy"]:
            state.update(healthy_since=None, failed_rounds=0, unanswered=[])
            return state, False, None
        if state.get("healthy_since") is None:
            state["healthy_since"] = seen["now"]
        state["unanswered"] = sorted(seen["unanswered"])
        if not seen["unanswered"]:
            state.update(failed_rounds=0, fruitless_restarts=0, gave_up=False)
            return state, False, None
        if seen.get("waiting"):
            return state, False, None  # a busy engine answers late: not a failed round
        state["failed_rounds"] = state.get("failed_rounds", 0) + 1
        if state["failed_rounds"] < failures or state.get("gave_up"):
            return state, False, None
        ranks = ", ".join("%d (%s)" % (rank, config["rank_nodes"][str(rank)]) for rank in state["unanswered"])
        if state.get("fruitless_restarts", 0) >= GIVE_UP:
            state["gave_up"] = True
            return state, False, ("DP rank(s) %s still give no answer after %d restarts of %s: no more restarts "
                                  "until a round is answered" % (ranks, GIVE_UP, config["serve_unit"]))
        message = ("DP rank(s) %s gave no answer to a 1-token completion within %ds, %d rounds in a row: restarting "
                   "%s so that every node joins its start-up again" % (
                       ranks, config["probe_timeout"], failures, config["serve_unit"]))
        state.update(failed_rounds=0, healthy_since=None, restarts=state.get("restarts", 0) + 1,
                     fruitless_restarts=state.get("fruitless_restarts", 0) + 1)
        return state, True, message
    if seen["healthy"]:
        state.update(head_seen_up=seen["now"], head_down_polls=0, head_down_since=None,
                     head_connections=sorted(seen["connections"]))
        return state, False, None
    state["head_down_polls"] = state.get("head_down_polls", 0) + 1
    if state.get("head_down_since") is None:
        state["head_down_since"] = seen["now"]
    seen_up, started = state.get("head_seen_up"), seen["serve_started"]
    # The connections of the head that was up: its processes live on (or went without closing them, power lost: no
    # longer than a start-up's wait).
    kept = set(seen["connections"]) & set(state.get("head_connections") or [])
    held = bool(kept) and seen["now"] - state["head_down_since"] < config["grace"]
    if state["head_down_polls"] < failures or seen_up is None or started is None or started > seen_up or held:
        return state, False, None
    message = ("the head's API at %s has been down for %d polls after it was up at %s while this node's engines "
               "ran, and they hold no connection to it: restarting %s so that they join the head's next start-up" % (
                   config["head_url"], state["head_down_polls"], time.strftime("%H:%M:%S", time.localtime(seen_up)),
                   config["serve_unit"]))
    state.update(head_down_polls=0, head_down_since=None, restarts=state.get("restarts", 0) + 1)
    return state, True, message


def system(program):
    return shutil.which(program, path=SYSTEM_PATH) or program


def serve_started(unit):
    """When UNIT last became active (epoch seconds), or None when it is not active."""
    shown = subprocess.run([system("systemctl"), "show", "--property=ActiveState,ActiveEnterTimestampMonotonic", unit],
                           capture_output=True, text=True, check=False).stdout
    values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    if values.get("ActiveState") != "active":
        return None
    # The monotonic clock, turned into the wall clock: what status.yml compares across nodes.
    since = int(values.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
    return time.time() - (time.monotonic() - since)


def status_of(url, timeout, body=None, headers=None):
    """The HTTP status URL answers with within TIMEOUT, or None when nothing answers (refused, reset, timed out)."""
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(url, data=data, headers=dict(headers or {}, **{"Content-Type": "application/json",
                                                                                 "User-Agent": USER_AGENT}))
    try:
        with urllib.request.urlopen(call, timeout=timeout) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, ValueError, http.client.HTTPException):
        return None


def unanswered(config):
    """The DP ranks that gave no answer to a 1-token completion."""
    headers = {}
    key = os.environ.get("VLLM_API_KEY")
    if key:
        headers["Authorization"] = "Bearer " + key
    body = {"model": config["model"], "prompt": "ping", "max_tokens": 1}
    url = config["head_url"] + "/v1/completions"
    if not config["rank_header"]:
        return [] if status_of(url, config["probe_timeout"], body, headers) is not None else list(config["ranks"])
    return [rank for rank in config["ranks"] if status_of(
        url, config["probe_timeout"], body, dict(headers, **{"X-data-parallel-rank": str(rank)})) is None]


def waiting(config):
    """The requests waiting in the engine (vllm:num_requests_waiting, summed), or None where /metrics is not read."""
    call = urllib.request.Request(config["head_url"] + "/metrics", headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(call, timeout=10) as answer:
            text = answer.read().decode("utf-8", "replace")
    except (OSError, ValueError, http.client.HTTPException):
        return None
    values = re.findall(r"^vllm:num_requests_waiting(?:\{[^}]*\})? ([0-9.eE+-]+)$", text, re.M)
    return sum(float(value) for value in values) if values else None


def connections(unit, address):
    """The established TCP connections ("local peer") that processes of UNIT hold to ADDRESS."""
    listed = subprocess.run([system("ss"), "-Htnp", "state", "established", "dst", address],
                            capture_output=True, text=True, check=False).stdout
    found, member = set(), {}
    for line in listed.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        for pid in set(re.findall(r"pid=(\d+)", line)):
            if pid not in member:  # a process holds several connections: its cgroup is read once
                member[pid] = in_unit(pid, unit)
            if member[pid]:
                found.add("%s %s" % (fields[2], fields[3]))
                break
    return sorted(found)


def in_unit(pid, unit):
    """Whether process PID belongs to UNIT (its cgroup), False when it is gone."""
    try:
        with open("/proc/%s/cgroup" % pid) as handle:
            return "/%s" % unit in handle.read()
    except OSError:
        return False


def write_state(path, state):
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(state, handle)
    os.replace(temporary, path)


def main(config_path):
    with open(config_path) as handle:
        config = json.load(handle)
    state = {"role": config["role"], "serve_unit": config["serve_unit"]}
    head_address = urllib.parse.urlsplit(config["head_url"]).hostname
    while True:
        started = serve_started(config["serve_unit"])
        head = config["role"] == "head"
        healthy = (started is not None or not head) and status_of(config["head_url"] + "/health", 10) == 200
        missing = unanswered(config) if healthy and head else []
        seen = {"now": time.time(), "serve_started": started, "healthy": healthy, "unanswered": missing,
                "waiting": waiting(config) if missing else None,
                "connections": [] if head else connections(config["serve_unit"], head_address)}
        state, restart, message = decide(config, state, seen)
        state.update(checked=seen["now"], serve_started=started)
        if message:
            print(message, flush=True)
        if restart:
            subprocess.run([system("systemctl"), "restart", "--no-block", config["serve_unit"]], check=False)
        write_state(config["state_file"], state)
        time.sleep(config["interval"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
