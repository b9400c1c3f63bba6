#!/usr/bin/env bash
# Regenerate every vLLM serve option table the planner uses and the --help=all
# captures the tests check them against, from the real wheels on PyPI.
#
# Usage: tools/regenerate_vllm_tables.sh [VERSION ...]   (default: every version in SUPPORTED)
# Needs python3.11 and PyPI; takes a few minutes per version (one venv each under
# $VLLM_TABLES_WORK, default /tmp/vllm-tables, reused when present).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${VLLM_TABLES_WORK:-/tmp/vllm-tables}
# Keep in step with VLLM_RELEASES in plugins/module_utils/engines/releases.py and
# plugins/module_utils/engines/option_tables.py (unit tests check that every table
# they list exists and names its release).
SUPPORTED="0.9.1 0.11.0 0.23.0 0.30.0 0.32.0 0.33.0"
# vLLM's GPU kernels and their CUDA stacks are not needed to build the parser: the
# CPU torch stands in for the pinned one (the options do not depend on it). torchcodec
# and PyNvVideoCodec (vLLM 0.30 and later) are CUDA video decoders: torchcodec's library
# wants libnvrtc and raises OSError at import, which vLLM only guards as ImportError.
skip='^(torch|torchaudio|torchvision|torchcodec|pynvvideocodec|xformers|flashinfer|nvidia|tilelang|apache-tvm|quack|tokenspeed|humming|fastsafetensors|triton|cupy|ray|intel|zentorch|deep[-_]gemm|numba)([^a-z_-]|$)'
torch_requirement=${VLLM_TABLES_TORCH:-torch==2.13.0}

mkdir -p "$work"
if [ $# -eq 0 ]; then
  read -r -a versions <<< "$SUPPORTED"
  set -- "${versions[@]}"
fi
for version in "$@"; do
  venv="$work/venv-$version"
  wheels="$work/wheel-$version"
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv" "$wheels"
    python3.11 -m venv "$venv"
    "$venv/bin/python" -m pip download -q --no-deps -d "$wheels" "vllm==$version"
    wheel=$(ls "$wheels"/vllm-*.whl)
    "$venv/bin/python" -m pip install -q "$torch_requirement"
    unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
      | grep -viE "$skip" > "$work/requirements-$version.txt"
    # The newest releases of some requirements no longer import with an old vLLM: pin
    # them to what was current at that vLLM's release.
    case $version in
      0.9.1) echo "transformers==4.52.4" >> "$work/requirements-$version.txt" ;;
    esac
    "$venv/bin/python" -m pip install -q -r "$work/requirements-$version.txt"
    "$venv/bin/python" -m pip install -q --no-deps "$wheel"
    touch "$venv/.complete"
  fi
  wheel=$(ls "$wheels"/vllm-*.whl)
  module="$repo/plugins/module_utils/engines/vllm_options_${version//./_}.py"
  (cd "$repo" && "$venv/bin/python" tools/extract_vllm_serve_options.py --wheel "$wheel" \
     --table "$module" --help-text "tests/vllm_help/vllm-$version-serve-help.txt" >/dev/null)
  echo "vLLM $version: $(grep -c "'kind'" "$module") options -> $module"
done
