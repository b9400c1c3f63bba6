"""A serve that never gets ready: the run fails on the API node with every serve node's journal.
Runs after test_serve_mp.py and leaves the cluster serving again."""

import json
import re

from serve_checks import address_of, main_pid, node, playbook, serve_process

HEAD, WORKER = "mp-head", "mp-worker"
testinfra_hosts = ["podman://" + HEAD]
# (Jinja delimiters would be templated by Ansible itself: in an inventory such a value is marked !unsafe.)
TEMPLATE = "<|im_start|>\\\"user\\\" 'it''s' 100% %H $HOME ${X} $(id) `id` back\\slash;"


def serve_environ(name):
    pid = main_pid(node(name), "ascend-serve.service")
    return pid, node(name).check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid).splitlines()


def test_a_serve_that_never_gets_ready_fails_with_every_nodes_journal_then_recovers():
    before = {name: serve_environ(name)[0] for name in (HEAD, WORKER)}
    # The double "loads the model" for an hour; readiness gives up after 10 s. The same run gives serve a
    # chat template with quotes, backslashes, % and $, which must reach the engine's argv unchanged.
    # 3600 shards: the double prints a loading line every second, as vLLM does per checkpoint shard.
    never_ready = {"ascend_extra_env": {"ASCEND_SIM_LOAD_SECONDS": "3600", "ASCEND_SIM_LOAD_SHARDS": "3600"},
                   "serve_ready_timeout": 10,
                   "ascend_serve_options": {"chat_template": TEMPLATE}}
    code, out = playbook("deploy.yml", "--tags", "node_env,serve", "-e", json.dumps(never_ready))
    assert code != 0
    assert "The service on %s did not become ready: no 200 from http://%s:8000/health within 10 s" % (
        HEAD, address_of(node(HEAD))) in " ".join(out.split()), out[-3000:]
    # While it waited: the elapsed time and the engine's latest loading line, in one task.
    progress = re.findall(r"%s: ready, (\d+) s of 10 s: /health: [^;\n]+; engine: Loading safetensors checkpoint "
                          r"shards:   0%% Completed \| (\d+)/3600 " % HEAD, out)
    assert len(progress) >= 2 and len({shards for _seconds, shards in progress}) >= 2, out[-3000:]
    assert "RETRYING" not in out
    marker = "--- last 40 lines of ascend-serve.service on %s ---"
    head_journal = out.split(marker % HEAD)[1].split(marker % WORKER)[0]
    worker_journal = out.split(marker % WORKER)[1]
    # What each node's serve logged while the head waited for the model.
    assert "all 4 DP ranks registered" in head_journal, head_journal[:2000]
    assert "headless engines for DP ranks 2..3 running" in worker_journal, worker_journal[:2000]
    # The node environment changed: node_env's handler restarted serve on both nodes with it.
    for name in (HEAD, WORKER):
        pid, environ = serve_environ(name)
        assert pid != before[name] and "ASCEND_SIM_LOAD_SECONDS=3600" in environ, name
        argv = serve_process(node(name))[0]
        assert argv[argv.index("--chat-template") + 1] == TEMPLATE, (name, argv)
    code, out = playbook("deploy.yml", "--tags", "node_env,serve")
    assert code == 0, out[-3000:]
    assert "ASCEND_SIM_LOAD_SECONDS=3600" not in serve_environ(HEAD)[1]
