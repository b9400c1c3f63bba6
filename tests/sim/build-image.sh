#!/usr/bin/env bash
# Build the simulated Ascend node image locally (no registry is reachable):
# a Debian 12 root file system from debootstrap, imported into podman, plus
# the hardware test doubles, a simulated CANN nnrt package and a wheelhouse.
# Tagged with a hash of its inputs, so a repeated run costs seconds.
# Prints the image name. Usage: tests/sim/build-image.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${ASCEND_SIM_CACHE:-$repo/.cache/sim}
mirror=${ASCEND_SIM_MIRROR:-http://deb.debian.org/debian}
# nnrt packages (pyACL) and CANN toolkit, kernels and nnal packages for both CANN layouts the profiles simulate.
cann_versions=${ASCEND_SIM_CANN_VERSIONS:-8.0.RC1 8.5.0}
samples="$repo/tests/unit/plugins/module_utils/node/hardware_samples"
ray_requirement=${ASCEND_SIM_RAY:-ray[default]==2.52.1}
# What vllm-ascend's prefill/decode proxy imports (vLLM's fastapi[standard] brings them with a real engine; the
# fleet scenario's simulated engine installs them from the wheelhouse), at the bound its sdist's requirements.txt sets.
proxy_requirements="fastapi<0.124.0 httpx uvicorn"
# vllm-ascend's own source (its sdist on PyPI), for examples/disaggregated_prefill_v1: the proxy the collection runs.
vllm_ascend_sdist=vllm_ascend-0.23.0.post1.tar.gz
vllm_ascend_sha256=a3b9f4a5dd7aa50c37e03d1f35937c4ae5aeacc49b734cac74d59ce5757738e1
vllm_ascend_url=https://files.pythonhosted.org/packages/ab/7a/32a1b1f13467fb7372588206fa1ffb735f28dcd8504d562f5c7ccdbd90d0/$vllm_ascend_sdist
arch=$(uname -m)
# haproxy: the router role's package, prometheus the monitoring role's, aria2 the model role's pipelined copy
# (the nodes reach no mirror in the tests).
packages=systemd,systemd-sysv,dbus,python3,python3-venv,python3-apt,iproute2,iputils-ping,procps,ca-certificates,curl,sudo,less,nftables,openssh-server,rsync,aria2,haproxy,prometheus
log() { echo "build-image: $*" >&2; }

"$here/setup-host.sh" >&2
mkdir -p "$cache"
# One build at a time per cache (two test runs at once would debootstrap into the same directory).
exec 9>"$cache/build-image.lock"
flock 9

# The key molecule's scenarios log in with as root (.config/molecule/config.yml names this path).
ssh_key="$repo/.cache/sim-ssh/id_ed25519"
if [ ! -f "$ssh_key" ]; then
  mkdir -p "$(dirname "$ssh_key")"
  ssh-keygen -q -t ed25519 -N '' -C ascend-sim -f "$ssh_key"
fi

# Base image: changes only with the package list.
base_hash=$(printf '%s\n' "$packages" "$mirror" bookworm | sha256sum | cut -c1-12)
base="localhost/ascend-sim-base:$base_hash"
if ! podman image exists "$base"; then
  rootfs="$cache/rootfs-$base_hash"
  log "debootstrap $rootfs (a few minutes, once)"
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" >&2
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --change 'CMD ["/sbin/init"]' - "$base" >&2
  rm -rf "$rootfs"
fi

# For tests/sim/build-engine-image.sh, which builds the engine image on the same base.
echo "$base" > "$cache/base-image"

# Node image: the base plus everything under tests/sim.
# The serve doubles parse exactly the options of the real `vllm serve --help=all`
# stored in tests/vllm_help (with its reader), not the collection's own table.
vllm_help="$repo/tests/vllm_help"
# The metrics of each vLLM release (tools/extract_vllm_metrics.py), which the serve double exports.
metrics="$repo/tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics"
inputs=$( (cd "$here" && find doubles image nnrt cann makeself-header.sh build-image.sh -type f -print0 | sort -z \
  | xargs -0 sha256sum; cd "$vllm_help" && sha256sum reader.py vllm-*-serve-help.txt; cd "$metrics" && sha256sum vllm-*.json;
  cd "$samples" && sha256sum driver-version.info__* ascend_toolkit_install.info__*;
  echo "$base $cann_versions $ray_requirement $proxy_requirements $vllm_ascend_sha256 $arch"; cat "$ssh_key.pub") \
  | sha256sum | cut -c1-12)
image="localhost/ascend-sim-node:$inputs"
if ! podman image exists "$image"; then
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  cp -r "$here/doubles" "$here/image" "$context/"
  cp "$ssh_key.pub" "$context/image/authorized_keys"
  mkdir "$context/doubles/vllm_help"
  cp "$vllm_help"/reader.py "$vllm_help"/vllm-*-serve-help.txt "$context/doubles/vllm_help/"
  cp -r "$metrics" "$context/doubles/vllm_metrics"
  # The pyACL double dlopens this stand-in for CANN's libascendcl.so (built for this machine's architecture).
  gcc -shared -fPIC -o "$context/doubles/libascendcl.so" "$here/doubles/libascendcl.c"
  # The simulated drivers' version.info files are the captures.
  mkdir "$context/doubles/drivers"
  cp "$samples"/driver-version.info__* "$context/doubles/drivers/"
  for version in $cann_versions; do
    "$here/nnrt/build-nnrt.sh" "$version" "$arch" "$context/packages" >/dev/null
    # innerversion and compatible_version: the 8.0.RC3 capture's lines for the old layout (a range), the 8.5.0
    # capture's for the new one.
    case "$version" in
      8.5.*) sample=ascend_toolkit_install.info__cann-8.5.0_new-cann-layout_aarch64__1.txt ;;
      *) sample=ascend_toolkit_install.info__cann-8.0.RC3__1.txt ;;
    esac
    "$here/cann/build-cann.sh" "$version" "$arch" "$context/packages" \
      "$(grep -oP '^innerversion=\K.*' "$samples/$sample")" "$(grep -oP '^compatible_version=\K.*' "$samples/$sample")" \
      "$context/doubles/libascendcl.so" >/dev/null
  done
  # Constructed for the driver check: a newer toolkit (9.0.1, its innerversion made up) that lists only
  # V100R001C18, the release of the 24.1.rc2.2 driver capture, so a 23.0.7 driver (C15) is refused.
  "$here/cann/build-cann.sh" 9.0.1 "$arch" "$context/packages" V100R001C26SPC001B001 "[V100R001C18]" \
    "$context/doubles/libascendcl.so" >/dev/null
  wheelhouse="$cache/wheelhouse-$(printf '%s' "$ray_requirement $proxy_requirements" | sha256sum | cut -c1-12)"
  if [ ! -f "$wheelhouse/.complete" ]; then
    log "downloading $ray_requirement $proxy_requirements into $wheelhouse"
    rm -rf "$wheelhouse"
    # shellcheck disable=SC2086 # one requirement per word
    python3.11 -m pip download -q -d "$wheelhouse" "$ray_requirement" $proxy_requirements "pip" "setuptools" \
      "wheel" >&2
    touch "$wheelhouse/.complete"
  fi
  if ! echo "$vllm_ascend_sha256  $cache/$vllm_ascend_sdist" | sha256sum -c --status 2>/dev/null; then
    log "downloading $vllm_ascend_sdist"
    curl -fsSL --retry 3 -o "$cache/$vllm_ascend_sdist.part" "$vllm_ascend_url"
    echo "$vllm_ascend_sha256  $cache/$vllm_ascend_sdist.part" | sha256sum -c --status
    mv "$cache/$vllm_ascend_sdist.part" "$cache/$vllm_ascend_sdist"
  fi
  mkdir -p "$context/vllm-ascend"
  tar -xzf "$cache/$vllm_ascend_sdist" -C "$context/vllm-ascend" --strip-components=1 \
    "${vllm_ascend_sdist%.tar.gz}/examples/disaggregated_prefill_v1"
  mkdir -p "$context/wheelhouse"
  cp "$wheelhouse"/*.whl "$context/wheelhouse/" 2>/dev/null || true
  cp "$wheelhouse"/*.tar.gz "$context/wheelhouse/" 2>/dev/null || true
  log "building $image"
  podman build --pull=never --build-arg BASE="$base" -f "$context/image/Containerfile" -t "$image" "$context" >&2
fi
echo "$image"
