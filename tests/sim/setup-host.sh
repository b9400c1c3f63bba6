#!/usr/bin/env bash
# Prepare this Debian 12 machine (as root) to run the simulated Ascend cluster:
# podman with the runc runtime, cgroupfs, no default ulimits and file events
# (the only configuration that runs here), plus debootstrap, makeself and gcc
# (the libascendcl.so stand-in of the pyACL double), the SSH client (the
# serve_ray_dp scenario deploys over SSH), rsync and aria2 (the model role
# copies from the controller with them) and haproxy (tests/sim/test_router.py runs the
# router's configuration against serve doubles on loopback).
set -euo pipefail

packages=(podman runc debootstrap makeself iproute2 iputils-ping ca-certificates gcc libc6-dev openssh-client rsync aria2 haproxy)
missing=()
for pkg in "${packages[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

conf=/etc/containers/containers.conf
want='[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
  mkdir -p /etc/containers
  printf '%s\n' "$want" > "$conf"
fi
podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}}' >/dev/null
