#!/usr/bin/env bash
# Build the simulated CANN packages of one version into OUTDIR, real makeself archives like Huawei's:
#   Ascend-cann-toolkit_<VER>_linux-<ARCH>.run   --full --install-path=ROOT
#   Ascend-cann-kernels-910b_<VER>_linux-<ARCH>.run --install --install-path=ROOT (needs that toolkit;
#     from 8.5 named Ascend-cann-910b-ops_<VER>_linux-<ARCH>.run)
#   Ascend-cann-nnal_<VER>_linux-<ARCH>.run      --install --install-path=ROOT (needs set_env.sh sourced)
# The toolkit installs CANN 8.5 and later as ROOT/cann-<VER> behind ROOT/cann, earlier ones as
# ROOT/ascend-toolkit/<VER> behind ROOT/ascend-toolkit/latest, with the test doubles' set_env.sh and
# libascendcl.so. Its ascend_toolkit_install.info is in the published format
# (hardware-samples/ascend_toolkit_install.info__cann-*); INNER and COMPATIBLE give its innerversion and
# compatible_version lines. Where the real package keeps that file before installing is not captured:
# this one keeps it at the top of the archive. An installer fails with the text of
# /etc/ascend-sim/node.json's "fail" entry for its package name ("Ascend-cann-toolkit", ...), read under
# $ASCEND_SIM_ROOT as the other doubles do.
# Usage: build-cann.sh VERSION ARCH OUTDIR INNER COMPATIBLE LIBASCENDCL
set -euo pipefail
usage="usage: build-cann.sh VERSION ARCH OUTDIR INNER COMPATIBLE LIBASCENDCL"
version=${1:?$usage} arch=${2:?$usage} out=${3:?$usage} inner=${4:?$usage} compatible=${5:?$usage}
library=${6:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
header="$work/header.sh"
"$here/../makeself-header.sh" "$header"
case "$version" in
  [0-7].*|8.[0-4].*|8.[0-4]) layout=ascend-toolkit kernels_name=Ascend-cann-kernels-910b_${version} ;;
  *) layout=cann kernels_name=Ascend-cann-910b-ops_${version} ;;
esac
mkdir -p "$out"

# The start of every installer: its options, and the failure a test asks for.
preamble() {
  cat <<PREAMBLE
#!/bin/sh
# $1 installer (simulated): $2 --install-path=DIR [--quiet]
set -e
mode= root=/usr/local/Ascend for_all=
for arg in "\$@"; do
  case "\$arg" in
    $2) mode=install ;;
    --install-for-all) for_all=yes ;;
    --install-path=*) root=\${arg#--install-path=} ;;
    --quiet) ;;
    *) echo "$1: unknown option \$arg" >&2; exit 1 ;;
  esac
done
[ -n "\$mode" ] || { echo "$1: nothing to do (use $2)" >&2; exit 1; }
told=\$(python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[2] + "/etc/ascend-sim/node.json")).get("fail", {}).get(sys.argv[1], ""))
except (OSError, ValueError):
    pass' "$1" "\${ASCEND_SIM_ROOT:-}")
[ -z "\$told" ] || { echo "$1: \$told" >&2; exit 1; }
if [ "$layout" = cann ]; then home=\$root/cann-$version; else home=\$root/ascend-toolkit/$version; fi
PREAMBLE
}

# archive DIR NAME FLAG FILE: DIR/install.sh from the preamble and the body on stdin, then OUTDIR/FILE.
archive() {
  { preamble "$2" "$3"; cat; } > "$1/install.sh"
  chmod +x "$1/install.sh"
  makeself --quiet --header "$header" --nox11 "$1" "$out/$4" "$2 $version" ./install.sh >/dev/null
}

toolkit="$work/toolkit"
mkdir -p "$toolkit"
cat > "$toolkit/ascend_toolkit_install.info" <<INFO
package_name=Ascend-cann-toolkit
version=$version
innerversion=$inner
compatible_version=$compatible
arch=$arch
os=linux
path=@HOME@/$arch-linux
INFO
sed "s/@VERSION@/$version/g" "$here/../doubles/set_env.$layout.sh" > "$toolkit/set_env.sh"
cp "$library" "$toolkit/libascendcl.so"
archive "$toolkit" Ascend-cann-toolkit --full "Ascend-cann-toolkit_${version}_linux-${arch}.run" <<INSTALL
mkdir -p "\$home/$arch-linux/lib64"
sed "s|@HOME@|\$home|" ascend_toolkit_install.info > "\$home/$arch-linux/ascend_toolkit_install.info"
cp libascendcl.so "\$home/$arch-linux/lib64/"
ln -sfn $arch-linux/lib64 "\$home/lib64"
echo "runtime_running_version=[$version]" > "\$home/version.cfg"
if [ "$layout" = cann ]; then
  cp set_env.sh "\$home/set_env.sh"
  ln -sfn cann-$version "\$root/cann"
else
  cp set_env.sh "\$root/ascend-toolkit/set_env.sh"
  ln -sfn $version "\$root/ascend-toolkit/latest"
fi
# --install-for-all: every account may read the tree (makeself runs installers under umask 077).
if [ -n "\$for_all" ]; then
  chmod -R go+rX "\$home"
  [ "$layout" = cann ] || chmod go+rX "\$root/ascend-toolkit" "\$root/ascend-toolkit/set_env.sh"
fi
echo "Ascend-cann-toolkit $version install success: \$home"
INSTALL

kernels="$work/kernels"
mkdir -p "$kernels"
archive "$kernels" Ascend-cann-kernels-910b --install "${kernels_name}_linux-${arch}.run" <<INSTALL
[ -f "\$home/$arch-linux/ascend_toolkit_install.info" ] || {
  echo "Ascend-cann-kernels-910b: no CANN toolkit $version under \$root; install the toolkit first" >&2; exit 1; }
mkdir -p "\$home/opp_kernel/built-in"
[ -z "\$for_all" ] || chmod -R go+rX "\$home/opp_kernel"
echo "Ascend-cann-kernels-910b $version install success: \$home/opp_kernel"
INSTALL

nnal="$work/nnal"
mkdir -p "$nnal"
archive "$nnal" Ascend-cann-nnal --install "Ascend-cann-nnal_${version}_linux-${arch}.run" <<INSTALL
[ -n "\${ASCEND_TOOLKIT_HOME:-}" ] || {
  echo "Ascend-cann-nnal: source the CANN toolkit's set_env.sh first" >&2; exit 1; }
mkdir -p "\$root/nnal/atb/$version/atb"
ln -sfn $version "\$root/nnal/atb/latest"
# nnal-atb-version.info__8.2.RC2__1.txt: four-space indented "key : value" lines.
printf '    Ascend-cann-atb : %s\n    Ascend-cann-atb Version : %s.B001\n    Platform : %s\n' \
  $version $version $arch > "\$root/nnal/atb/$version/version.info"
echo "export ATB_HOME_PATH=\$root/nnal/atb/latest/atb" > "\$root/nnal/atb/set_env.sh"
[ -z "\$for_all" ] || chmod -R go+rX "\$root/nnal"
echo "Ascend-cann-nnal $version install success: \$root/nnal/atb/$version"
INSTALL
ls "$out"/Ascend-cann-*"${version}"_linux-"${arch}".run
