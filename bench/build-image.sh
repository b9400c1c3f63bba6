#!/usr/bin/env bash
# Build the benchmark node image on top of the simulated node image
# (tests/sim/build-image.sh). Prints its name. Usage: bench/build-image.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ray_requirement=${ASCEND_SIM_RAY:-ray[default]==2.52.1}
cann_version=${ASCEND_SIM_CANN_VERSION:-8.0.RC1}
node_image=$("$repo/tests/sim/build-image.sh")
tag=$( (echo "$node_image $ray_requirement $cann_version"; cat "$here/image/Containerfile") | sha256sum | cut -c1-12)
image="localhost/ascend-bench-node:$tag"
if ! podman image exists "$image"; then
  echo "build-image: building $image" >&2
  podman build --pull=never --build-arg NODE_IMAGE="$node_image" --build-arg RAY_REQUIREMENT="$ray_requirement" \
    --build-arg CANN_VERSION="$cann_version" -f "$here/image/Containerfile" -t "$image" "$here/image" >&2
fi
echo "$image"
