#!/usr/bin/env bash
# The sandbox: a simulated two-node Ascend cluster on local podman, deployed
# with this collection exactly as a real one (inventories/sandbox/).
#   tools/sandbox.sh demo   install what is needed (Debian 12, root), start the
#                           nodes, run deploy.yml, ask for a completion
#   tools/sandbox.sh down   remove the nodes and their network
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
network=ascend-sandbox
subnet=10.89.250.0/24
nodes=(sandbox-head=10.89.250.11 sandbox-worker=10.89.250.12)
npus_per_node=2
# Must match ascend_model and ascend_served_model_name in inventories/sandbox/group_vars.
model=/models/Qwen2.5-7B-Instruct
served_name=qwen2.5
model_config='{"num_attention_heads": 28, "num_key_value_heads": 4, "num_hidden_layers": 28}'

log() { printf '\n=== %s\n' "$*"; }

start_nodes() {
  log "installing what the sandbox needs"
  "$repo/tests/run.sh" setup
  "$repo/tests/sim/setup-host.sh"
  local image name ip
  image=$("$repo/tests/sim/build-image.sh")
  podman network exists "$network" || podman network create --subnet "$subnet" "$network" >/dev/null
  for entry in "${nodes[@]}"; do
    name=${entry%%=*} ip=${entry#*=}
    log "starting $name ($ip, $npus_per_node simulated NPUs)"
    podman container exists "$name" || podman create --name "$name" --hostname "$name" \
      --network "$network" --ip "$ip" --systemd=always --cap-add SYS_ADMIN --cap-add NET_ADMIN "$image" /sbin/init >/dev/null
    podman start "$name" >/dev/null
    podman exec "$name" timeout 60 systemctl is-system-running --wait >/dev/null || true
    # The serve double installed as vllm-mindspore 0.5.1 (on vLLM 0.11.0), the inventory's engine.
    podman exec "$name" sh -c "printf '{\"npu_count\": %d, \"engine\": {\"name\": \"vllm-mindspore\", \"version\": \"0.5.1\", \"vllm\": \"0.11.0\"}}\n' $npus_per_node > /etc/ascend-sim/node.json \
      && ascend-sim apply && mkdir -p '$model' && printf '%s\n' '$model_config' > '$model/config.json'"
  done
}

demo() {
  start_nodes
  log "ansible-playbook deploy.yml -i inventories/sandbox/hosts"
  (cd "$repo" && .venv/bin/ansible-playbook deploy.yml -i inventories/sandbox/hosts)
  log "POST http://10.89.250.11:8000/v1/completions, from sandbox-worker"
  local answer
  answer=$(podman exec sandbox-worker curl -sS --max-time 60 http://10.89.250.11:8000/v1/completions \
    -H 'Content-Type: application/json' \
    -d "{\"model\": \"$served_name\", \"prompt\": \"I am\", \"max_tokens\": 16, \"temperature\": 0}")
  printf '%s\n' "$answer"
  python3 -c 'import json, sys; print("\nanswer: I am" + json.load(sys.stdin)["choices"][0]["text"])' <<<"$answer"
  cat <<MSG

The sandbox is running. Try:
  .venv/bin/ansible-playbook playbooks/status.yml -i inventories/sandbox/hosts
  podman exec sandbox-head journalctl -u ascend-serve.service
  tools/sandbox.sh down
MSG
}

down() {
  for entry in "${nodes[@]}"; do podman rm --force --time 5 "${entry%%=*}" >/dev/null 2>&1 || true; done
  podman network exists "$network" && podman network rm "$network" >/dev/null
  echo "sandbox removed"
}

case "${1:-}" in
  demo) demo ;;
  down) down ;;
  *) echo "usage: $0 demo|down" >&2; exit 2 ;;
esac
