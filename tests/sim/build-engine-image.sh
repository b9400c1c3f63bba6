#!/usr/bin/env bash
# Build what container mode's scenario needs, locally (no registry is reachable): a simulated node
# that runs podman (the node image plus podman and crun) and the simulated engine image, saved as an
# archive the scenario loads onto the nodes as a user without a registry would.
# Tagged with a hash of the inputs, so a repeated run costs seconds.
# Usage: tests/sim/build-engine-image.sh NODE_IMAGE; prints "NODE_WITH_PODMAN ARCHIVE ENGINE_IMAGE".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${ASCEND_SIM_CACHE:-$repo/.cache/sim}
ray_requirement=${ASCEND_SIM_RAY:-ray[default]==2.52.1}
# The image's Ray: the vllm-ascend image installs plain `ray` (no dashboard), which keeps the archive small.
engine_ray=${ASCEND_SIM_ENGINE_RAY:-ray==2.52.1}
node=${1:?usage: build-engine-image.sh NODE_IMAGE}
engine_name=localhost/vllm-ascend-sim
log() { echo "build-engine-image: $*" >&2; }

# One build at a time per cache (two test runs at once would save into the same archive).
mkdir -p "$cache"
exec 9>"$cache/build-engine-image.lock"
flock 9

base=$(cat "$cache/base-image" 2>/dev/null || true)
if [ -z "$base" ] || ! podman image exists "$base"; then
  echo "no base image: run tests/sim/build-image.sh first" >&2
  exit 1
fi

node_hash=$(printf '%s\n' "$node" "$(sha256sum "$here/engine/Containerfile.node")" | sha256sum | cut -c1-12)
podman_node="localhost/ascend-sim-node-podman:$node_hash"
if ! podman image exists "$podman_node"; then
  log "building $podman_node"
  podman build --pull=never --build-arg NODE="$node" -f "$here/engine/Containerfile.node" -t "$podman_node" "$here/engine" >&2
fi

vllm_help="$repo/tests/vllm_help"
metrics="$repo/tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics"
inputs=$( (cd "$here" && sha256sum engine/Containerfile doubles/ascend_sim.py doubles/vllm_sim.py doubles/kv_connector_sim.py \
    doubles/vllm_metrics_sim.py doubles/set_env.cann.sh; cd "$metrics" && sha256sum vllm-*.json;
  cd "$vllm_help" && sha256sum reader.py vllm-*-serve-help.txt; echo "$base $engine_ray $(uname -m)") \
  | sha256sum | cut -c1-12)
engine="$engine_name:v0.23.0"
archive="$cache/engine-$inputs.tar"
if [ ! -f "$archive" ]; then
  wheelhouse="$cache/wheelhouse-$(printf '%s' "$ray_requirement" | sha256sum | cut -c1-12)"
  if [ ! -f "$wheelhouse/.complete" ]; then
    log "downloading $ray_requirement into $wheelhouse"
    rm -rf "$wheelhouse"
    python3.11 -m pip download -q -d "$wheelhouse" "$ray_requirement" >&2
    touch "$wheelhouse/.complete"
  fi
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  mkdir -p "$context/doubles/vllm_help" "$context/wheelhouse"
  cp "$here"/doubles/ascend_sim.py "$here"/doubles/vllm_sim.py "$here"/doubles/kv_connector_sim.py \
    "$here"/doubles/vllm_metrics_sim.py "$here"/doubles/set_env.*.sh "$context/doubles/"
  # The metrics of each vLLM release (tools/extract_vllm_metrics.py), which the serve double exports.
  cp -r "$metrics" "$context/doubles/vllm_metrics"
  cp "$vllm_help"/reader.py "$vllm_help"/vllm-*-serve-help.txt "$context/doubles/vllm_help/"
  cp "$wheelhouse"/*.whl "$context/wheelhouse/"
  log "building $engine"
  podman build --pull=never --build-arg BASE="$base" --build-arg RAY_REQUIREMENT="$engine_ray" \
    -f "$here/engine/Containerfile" -t "$engine-$inputs" "$context" >&2
  podman tag "$engine-$inputs" "$engine"
  rm -f "$cache"/engine-*.tar "$cache"/engine-*.tar.tmp
  # podman save refuses a file that is not empty: a save cut short earlier leaves one behind.
  podman save --format docker-archive -o "$archive.tmp" "$engine" >&2
  mv "$archive.tmp" "$archive"
fi
echo "$podman_node $archive $engine"
