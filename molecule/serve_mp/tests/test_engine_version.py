"""The preflight reads the installed engine on every node and refuses one that is not the planned release.
Runs on the serving cluster and leaves it as it was (the preflight changes nothing)."""

import json

from serve_checks import main_pid, node, playbook

HEAD, WORKER = "mp-head", "mp-worker"
testinfra_hosts = ["podman://" + HEAD]
STATE = "/etc/ascend-sim/node.json"


def install_engine(name, engine):
    """What `pip install vllm-mindspore==X` does on that node (tests/sim/doubles/ascend_sim.py)."""
    host = node(name)
    state = json.loads(host.file(STATE).content_string)
    state["engine"] = engine
    host.check_output("printf '%%s' %s > %s && ascend-sim apply" % (json.dumps(json.dumps(state)), STATE))


def test_a_node_with_another_engine_release_is_refused_naming_both_versions():
    planned = {"name": "vllm-mindspore", "version": "0.5.1", "vllm": "0.11.0"}
    pids = {name: main_pid(node(name), "ascend-serve.service") for name in (HEAD, WORKER)}
    install_engine(WORKER, {"name": "vllm-mindspore", "version": "0.4.0", "vllm": "0.9.1"})
    try:
        code, out = playbook("preflight.yml")
        assert code != 0, out[-3000:]
        program = "/opt/ascend-inference/venv/bin/vllm-mindspore (Python /opt/ascend-inference/venv/bin/python3)"
        assert "host mp-worker: ascend_engine_version is 0.5.1 but the installed vllm-mindspore is 0.4.0: " \
               + program in out, out[-3000:]
        assert "host mp-worker: vllm-mindspore 0.5.1 runs on vLLM 0.11.0 but the installed vLLM is 0.9.1" in out
        assert "the installed engines differ between nodes: mp-head: vllm-mindspore 0.5.1 on vLLM 0.11.0; " \
               "mp-worker: vllm-mindspore 0.4.0 on vLLM 0.9.1" in out
        assert "host mp-head:" not in out
        # The inventory may name the older release: then the head is the odd one out.
        code, out = playbook("preflight.yml", "-e", "ascend_engine_version=0.4.0")
        assert code != 0
        assert "host mp-head: ascend_engine_version is 0.4.0 but the installed vllm-mindspore is 0.5.1" in out
        assert "host mp-head: vllm-mindspore 0.4.0 runs on vLLM 0.9.1 but the installed vLLM is 0.11.0" in out
        assert "host mp-worker:" not in out, out[-3000:]
    finally:
        install_engine(WORKER, planned)
    # Restored (the deploys of test_serve_not_ready.py run the preflight on it again).
    versions = node(WORKER).check_output(
        "/opt/ascend-inference/venv/bin/python3 -c \"import importlib.metadata as m; "
        "print(m.version('vllm-mindspore'), m.version('vllm'))\"")
    assert versions == "0.5.1 0.11.0"
    # Read-only: serve kept running throughout.
    assert pids == {name: main_pid(node(name), "ascend-serve.service") for name in (HEAD, WORKER)}
