#!/usr/bin/env bash
# Build the simulated CANN nnrt package OUTDIR/Ascend-cann-nnrt_<VER>_linux-<ARCH>.run:
# a real makeself self-extracting archive, like CANN's, that supports
# `--noexec --extract=DIR` and holds run_package/Ascend-pyACL_<VER>_linux-<ARCH>.run,
# itself a makeself archive whose installer takes `--full --install-path=DIR`
# and installs the pyACL double under DIR/CANN-<VER>/python/site-packages/.
set -euo pipefail
version=${1:?usage: build-nnrt.sh VERSION ARCH OUTDIR}
arch=${2:?usage: build-nnrt.sh VERSION ARCH OUTDIR}
out=${3:?usage: build-nnrt.sh VERSION ARCH OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

header="$work/header.sh"
"$here/../makeself-header.sh" "$header"

pyacl="$work/pyacl"
mkdir -p "$pyacl/acl"
cp "$here/../doubles/acl/__init__.py" "$pyacl/acl/"
cat > "$pyacl/install.sh" <<INSTALL
#!/bin/sh
# Ascend-pyACL installer (simulated): --full --install-path=DIR
set -e
mode= target=/usr/local/Ascend
for arg in "\$@"; do
  case "\$arg" in
    --full|--install) mode=install ;;
    --install-path=*) target=\${arg#--install-path=} ;;
    --quiet) ;;
    *) echo "Ascend-pyACL: unknown option \$arg" >&2; exit 1 ;;
  esac
done
[ -n "\$mode" ] || { echo "Ascend-pyACL: nothing to do (use --full)" >&2; exit 1; }
site="\$target/CANN-$version/python/site-packages"
mkdir -p "\$site"
cp -r acl "\$site/"
echo "version=$version" > "\$target/CANN-$version/pyACL_install.info"
echo "Ascend-pyACL $version install success: \$site"
INSTALL
chmod +x "$pyacl/install.sh"

nnrt="$work/nnrt"
mkdir -p "$nnrt/run_package"
makeself --quiet --header "$header" --nox11 "$pyacl" "$nnrt/run_package/Ascend-pyACL_${version}_linux-${arch}.run" \
  "Ascend-pyACL $version" ./install.sh >/dev/null
cat > "$nnrt/install.sh" <<'INSTALL'
#!/bin/sh
echo "simulated Ascend-cann-nnrt: only --noexec --extract=DIR is supported" >&2
exit 1
INSTALL
chmod +x "$nnrt/install.sh"
mkdir -p "$out"
makeself --quiet --header "$header" --nox11 "$nnrt" "$out/Ascend-cann-nnrt_${version}_linux-${arch}.run" \
  "Ascend-cann-nnrt $version" ./install.sh >/dev/null
echo "$out/Ascend-cann-nnrt_${version}_linux-${arch}.run"
