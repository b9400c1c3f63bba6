#!/usr/bin/env bash
# Replay a support bundle: tests/sim/replay.sh BUNDLE.json [REPORT.json]
# Starts one simulated node whose npu-smi and hccn_tool answer exactly what the
# bundle's node answered (a node's file from playbooks/collect.yml) and whose
# CANN, driver and NPU network files and /dev/davinciN are the bundle's; runs the
# preflight and the NPU network check on it (tests/sim/replay.yml) and prints one
# JSON object: the devices (logic IDs) and their physical IDs, the chips, the NPU
# family, CANN version and layout, the driver and the problems found. The node's
# addresses are its own, not the bundle's; its pings to the other nodes (format 2)
# are answered as recorded. The inventory takes the bundle's settings (the engine
# and its version, the service account) so that the checks judge as they did.
# Needs what tests/run.sh setup installs (podman, .venv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundle=${1:?usage: replay.sh BUNDLE.json [REPORT.json]}
report=${2:-}
network=ascend-replay
name=ascend-replay-$$
work=$(mktemp -d)
cleanup() { podman rm --force --time 0 "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

image=${ASCEND_SIM_IMAGE:-$("$here/build-image.sh")}
podman network exists "$network" || podman network create "$network" >/dev/null
podman create --name "$name" --hostname replay --network "$network" --systemd=always "$image" /sbin/init >/dev/null
# In place before the node boots: its ascend-sim.service then sets up the bundle's hardware.
podman cp "$bundle" "$name:/etc/ascend-sim/bundle.json"
podman start "$name" >/dev/null
podman exec "$name" timeout 60 systemctl is-system-running --wait >/dev/null || true
ip=$(podman container inspect "$name" --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')

mkdir -p "$work/reports"
cat > "$work/hosts.yml" <<INVENTORY
ascend_cluster:
  children:
    ascend_head:
      hosts:
        replay:
          ansible_connection: containers.podman.podman
          ansible_host: $name
          ansible_python_interpreter: /usr/bin/python3
          ascend_node_ip: $ip
  vars:
    # A one-node layout that fits any node: the checks, not the plan, are replayed.
    ascend_engine: vllm-ascend
    ascend_model: replayed-node
    ascend_launcher: mp
INVENTORY
# The live inventory's values the checks judge against (format 2); the layout stays the one above.
python3 - "$bundle" > "$work/settings.json" <<'SETTINGS'
import json, sys
settings = json.load(open(sys.argv[1])).get("settings") or {}
settings.pop("ascend_launcher", None)
print(json.dumps(settings))
SETTINGS
(cd "$repo" && ANSIBLE_COLLECTIONS_PATH="$repo/collections" "$repo/.venv/bin/ansible-playbook" \
  "$here/replay.yml" -i "$work/hosts.yml" -e "report_dir=$work/reports" -e "@$work/settings.json" \
  -e "replay_bundle=$(realpath "$bundle")" >"$work/playbook.log" 2>&1) || {
  cat "$work/playbook.log" >&2; echo "replay.sh: the replay playbook failed" >&2; exit 1; }
if [ -n "$report" ]; then cp "$work/reports/replay.json" "$report"; fi
cat "$work/reports/replay.json"
