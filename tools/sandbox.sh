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
# Must match ascend_served_model_name and model_src in inventories/sandbox/group_vars: a tiny Llama made on this
# machine, which the collection's model role copies to the nodes.
served_name=tiny
model_src=$repo/.cache/sandbox/tiny-llama

log() { printf '\n=== %s\n' "$*"; }

start_nodes() {
  log "installing what the sandbox needs"
  "$repo/tests/run.sh" setup
  "$repo/tests/sim/setup-host.sh"
  local image name ip
  # The simulated node with a real vLLM (its CPU build) in place of vllm-ascend: several GB, built once.
  image=$("$repo/tests/sim/build-vllm-image.sh" "$("$repo/tests/sim/build-image.sh")")
  python3 "$repo/tests/sim/vllm/tiny_model.py" "$model_src"
  podman network exists "$network" || podman network create --subnet "$subnet" "$network" >/dev/null
  for entry in "${nodes[@]}"; do
    name=${entry%%=*} ip=${entry#*=}
    log "starting $name ($ip, $npus_per_node simulated NPUs)"
    podman container exists "$name" || podman create --name "$name" --hostname "$name" \
      --network "$network" --ip "$ip" --systemd=always --cap-add SYS_ADMIN --cap-add NET_ADMIN --shm-size 1g \
      "$image" /sbin/init >/dev/null
    podman start "$name" >/dev/null
    podman exec "$name" timeout 60 systemctl is-system-running --wait >/dev/null || true
    # The simulated NPUs; the engine is the image's real vLLM.
    podman exec "$name" sh -c "printf '{\"npu_count\": %d}\n' $npus_per_node > /etc/ascend-sim/node.json && ascend-sim apply"
  done
}

demo() {
  start_nodes
  log "ansible-playbook deploy.yml -i inventories/sandbox/hosts"
  (cd "$repo" && .venv/bin/ansible-playbook deploy.yml -i inventories/sandbox/hosts)
  # From this machine, which is no cluster member: through the model's router on the head (the engine's own port,
  # 8000, admits the members only).
  log "POST http://10.89.250.11:8080/v1/completions (the router), from this machine"
  local answer
  answer=$(curl -sS --max-time 60 http://10.89.250.11:8080/v1/completions \
    -H 'Content-Type: application/json' \
    -d "{\"model\": \"$served_name\", \"prompt\": \"I am\", \"max_tokens\": 16, \"temperature\": 0, \"ignore_eos\": true}")
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
