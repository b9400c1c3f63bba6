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
  X-data-parallel-rank header to that rank; before, one completion reaches every rank's lock-step wave). When a
  rank has not answered within PROBE_TIMEOUT for FAILURES rounds in a row, the head's serve unit restarts: its
  start-up handshake takes every node again.
- headless node: GET the head's /health. When the head was seen up while this node's engines ran, and is then
  down FAILURES polls in a row, this node's serve unit restarts once (its engines belong to the head that went
  away); not again until the head has been up.

The state goes to STATE_FILE (JSON) for status.yml. Usage: python3 serve-watchdog.py CONFIG.json
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

# Names the probes in proxies' and servers' logs.
USER_AGENT = "ascend-serve-watchdog"


def decide(config, state, seen):
    """One round: SEEN is {"now", "serve_started" (epoch seconds, None when the unit is not active), "healthy",
    "unanswered" (head: the ranks that did not answer)}. Returns (state, restart, message)."""
    state = dict(state)
    failures = config["failures"]
    if config["role"] == "head":
        if seen["serve_started"] is None or not seen["healthy"]:
            state.update(healthy_since=None, failed_rounds=0, unanswered=[])
            return state, False, None
        if state.get("healthy_since") is None:
            state["healthy_since"] = seen["now"]
        state["unanswered"] = sorted(seen["unanswered"])
        state["failed_rounds"] = state.get("failed_rounds", 0) + 1 if seen["unanswered"] else 0
        if state["failed_rounds"] < failures:
            return state, False, None
        message = ("DP rank(s) %s did not answer a 1-token completion within %ds, %d rounds in a row: restarting %s "
                   "so that every node joins its start-up again" % (
                       ", ".join("%d (%s)" % (rank, config["rank_nodes"][str(rank)]) for rank in state["unanswered"]),
                       config["probe_timeout"], failures, config["serve_unit"]))
        state.update(failed_rounds=0, healthy_since=None, restarts=state.get("restarts", 0) + 1)
        return state, True, message
    if seen["healthy"]:
        state.update(head_seen_up=seen["now"], head_down_polls=0)
        return state, False, None
    state["head_down_polls"] = state.get("head_down_polls", 0) + 1
    seen_up, started = state.get("head_seen_up"), seen["serve_started"]
    if (state["head_down_polls"] < failures or seen_up is None or started is None or started > seen_up):
        return state, False, None
    message = ("the head's API at %s has been down for %d polls after it was up at %s while this node's engines "
               "ran: restarting %s so that they join the head's next start-up" % (
                   config["head_url"], state["head_down_polls"], time.strftime("%H:%M:%S", time.localtime(seen_up)),
                   config["serve_unit"]))
    state.update(head_down_polls=0, restarts=state.get("restarts", 0) + 1)
    return state, True, message


def serve_started(unit):
    """When UNIT last became active (epoch seconds), or None when it is not active."""
    shown = subprocess.run(["systemctl", "show", "--property=ActiveState,ActiveEnterTimestampMonotonic", unit],
                           capture_output=True, text=True, check=False).stdout
    values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    if values.get("ActiveState") != "active":
        return None
    # The monotonic clock, turned into the wall clock: what status.yml compares across nodes.
    since = int(values.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
    return time.time() - (time.monotonic() - since)


def request(url, timeout, body=None, headers=None):
    """True when URL answers 200 within TIMEOUT."""
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(url, data=data, headers=dict(headers or {}, **{"Content-Type": "application/json",
                                                                                 "User-Agent": USER_AGENT}))
    try:
        with urllib.request.urlopen(call, timeout=timeout) as answer:
            answer.read()
            return answer.status == 200
    except (OSError, ValueError):
        return False


def unanswered(config):
    """The DP ranks that did not answer a 1-token completion."""
    headers = {}
    key = os.environ.get("VLLM_API_KEY")
    if key:
        headers["Authorization"] = "Bearer " + key
    body = {"model": config["model"], "prompt": "ping", "max_tokens": 1}
    url = config["head_url"] + "/v1/completions"
    if not config["rank_header"]:
        return [] if request(url, config["probe_timeout"], body, headers) else list(config["ranks"])
    return [rank for rank in config["ranks"]
            if not request(url, config["probe_timeout"], body, dict(headers, **{"X-data-parallel-rank": str(rank)}))]


def write_state(path, state):
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(state, handle)
    os.replace(temporary, path)


def main(config_path):
    with open(config_path) as handle:
        config = json.load(handle)
    state = {"role": config["role"], "serve_unit": config["serve_unit"]}
    while True:
        started = serve_started(config["serve_unit"])
        healthy = started is not None or config["role"] != "head"
        healthy = healthy and request(config["head_url"] + "/health", 10)
        seen = {"now": time.time(), "serve_started": started, "healthy": healthy,
                "unanswered": unanswered(config) if healthy and config["role"] == "head" else []}
        state, restart, message = decide(config, state, seen)
        state.update(checked=seen["now"], serve_started=started)
        if restart:
            print(message, flush=True)
            subprocess.run(["systemctl", "restart", "--no-block", config["serve_unit"]], check=False)
        write_state(config["state_file"], state)
        time.sleep(config["interval"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
