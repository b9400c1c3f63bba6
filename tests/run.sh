#!/usr/bin/env bash
# The test command: tests/run.sh [STAGE...]
# Stages (default: all, in this order): lint sanity units integration sim molecule demo
# (`tests/run.sh setup` only installs what the stages need.)
# Installs what it needs on a fresh Debian 12 machine (as root), then runs
# every stage, reports each, and exits non-zero if any failed.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache="$repo/.cache"
python=${ASCEND_TEST_PYTHON:-python3.11}
venv="$repo/.venv"               # ansible, ansible-lint, molecule, pytest
# The sanity and unit stages run on the oldest and the newest ansible-core that
# requirements.txt admits (">=2.18,<2.22": 2.18 and 2.21), each in a virtualenv
# of its own; the newest needs Python 3.12 or later, which Debian 12 lacks
# (the build machines have it from pyenv).
core_oldest=$(grep -oP '^ansible-core>=\K[0-9]+\.[0-9]+' "$repo/requirements.txt")
core_bound=$(grep -oP '^ansible-core>=[0-9.]+,<\K[0-9]+\.[0-9]+' "$repo/requirements.txt")
core_newest=${core_bound%.*}.$((${core_bound#*.} - 1))
all_stages=(lint sanity units integration sim molecule demo)

log() { printf '\n=== %s\n' "$*"; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]} (run as root or install them)" >&2
    return 1
  fi
  log "apt-get install ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A Python of this minor version or newer: on PATH, or from pyenv.
find_python() {
  local minor candidate
  for minor in "$@"; do
    for candidate in "python$minor" /root/.pyenv/versions/"$minor".*/bin/"python$minor"; do
      "$candidate" -c '' 2>/dev/null && { command -v "$candidate"; return 0; }
    done
  done
  echo "no Python $* found (the newest ansible-core needs one)" >&2
  return 1
}

# Recreate a virtualenv (DIR PYTHON PIP-ARGS...) only when its requirements change.
ensure_venv() {
  local dir=$1 interpreter=$2; shift 2
  local stamp
  stamp=$(printf '%s\n' "$interpreter" "$@" | cat - "$repo/requirements.txt" "$repo/tests/requirements.txt" \
    | sha256sum | cut -d' ' -f1)
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then return 0; fi
  log "creating $dir"
  rm -rf "$dir"
  "$interpreter" -m venv "$dir" || return 1
  "$dir/bin/pip" install -q --upgrade pip || return 1
  "$dir/bin/pip" install -q "$@" || return 1
  echo "$stamp" > "$dir/.stamp"
}

setup() {
  command -v "$python" >/dev/null || apt_install python3 || return 1
  "$python" -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv || return 1
  # systemd: its systemd-analyze checks the serve unit (integration; the test fails without it).
  apt_install git shellcheck systemd || return 1
  ensure_promtool || return 1
  ensure_venv "$venv" "$python" -r "$repo/tests/requirements.txt" || return 1
  local newest_python core pip_version cores=("$core_oldest")
  ensure_venv "$(test_venv "$core_oldest")" "$python" "ansible-core==$core_oldest.*" || return 1
  # Without a Python 3.12+ (plain Debian 12) the rest still works; sanity and units then fail (ansible_test).
  if newest_python=$(find_python 3.13 3.12); then
    ensure_venv "$(test_venv "$core_newest")" "$newest_python" "ansible-core==$core_newest.*" || return 1
    cores+=("$core_newest")
  fi
  for core in "${cores[@]}"; do
    # ansible-test bootstraps pip in each venv it creates with a script from a
    # host these machines cannot reach; give it an offline stand-in.
    pip_version=$(grep -oP "pip='\K[0-9.]+" "$(test_venv "$core")"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py)
    mkdir -p ~/.ansible/test/cache/pip-wheels
    cp "$repo/tests/sanity/get_pip_standin.py" ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
    ls ~/.ansible/test/cache/pip-wheels/pip-"$pip_version"-*.whl >/dev/null 2>&1 \
      || "$venv/bin/pip" download -q --no-deps -d ~/.ansible/test/cache/pip-wheels "pip==$pip_version" || return 1
  done
}

test_venv() { echo "$cache/venv-ansible-test-$1"; }

# promtool (integration: the collection's Prometheus configuration and rules checked and unit-tested) from Debian's
# prometheus package, unpacked into the cache: installing the package would start a Prometheus on this machine.
promtool_bin() { echo "$cache/prometheus/usr/bin/promtool"; }
ensure_promtool() {
  [ -x "$(promtool_bin)" ] && return 0
  log "unpacking promtool from Debian's prometheus package"
  local debs
  debs=$(mktemp -d) || return 1
  (cd "$debs" && apt-get download prometheus >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get download prometheus >/dev/null; }) \
    && mkdir -p "$cache/prometheus" && dpkg-deb -x "$debs"/prometheus_*.deb "$cache/prometheus"
  local status=$?
  rm -rf "$debs"
  return $status
}

# ansible-test (sanity or units) on both ends of the supported ansible-core range.
ansible_test() {
  local command=$1 dir core venv_dir py status=0
  dir=$(tree) || return 1
  for core in "$core_oldest" "$core_newest"; do
    venv_dir=$(test_venv "$core")
    if [ ! -x "$venv_dir/bin/ansible-test" ]; then
      echo "ansible-core $core needs Python 3.12 or later, which this machine lacks: not tested" >&2
      status=1; continue
    fi
    py=$("$venv_dir/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    log "ansible-test $command, ansible-core $core, Python $py"
    (cd "$dir" && PATH="$venv_dir/bin:$PATH" ansible-test "$command" --local --requirements --python "$py") || status=1
  done
  return $status
}

# ansible-test needs the files under ansible_collections/ascend/inference,
# outside this git checkout (inside it, git would report them as ignored).
work=$(mktemp -d "${TMPDIR:-/tmp}/ascend-inference-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree() { "$repo/tests/build-tree.sh" "$work"; }

stage_lint() {
  local dir status=0
  (cd "$repo" && "$venv/bin/ansible-lint" --offline) || status=1
  # Every plugin's and role's documentation as antsibull-docs reads it (on the collection tree:
  # it looks for the collection under ansible_collections/), and the changelog fragments.
  dir=$(tree) || return 1
  (cd "$dir" && PATH="$venv/bin:$PATH" \
    antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .) || status=1
  (cd "$repo" && "$venv/bin/antsibull-changelog" lint) || status=1
  # The README's and docs/' relative links, then the docsite (warnings are errors).
  "$venv/bin/python" "$repo/tools/check_links.py" || status=1
  PATH="$venv/bin:$PATH" "$repo/tools/docsite.sh" || status=1
  return $status
}

stage_sanity() { ansible_test sanity; }

stage_units() { ansible_test units; }

stage_integration() {
  (cd "$repo" && ASCEND_TEST_PROMTOOL="$(promtool_bin)" "$venv/bin/python" -m pytest -p no:cacheprovider -q \
    tests/integration)
}

# The hardware test doubles themselves, on this machine.
stage_sim() {
  "$repo/tests/sim/setup-host.sh" || return 1
  (cd "$repo" && "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/sim)
}

# Every molecule scenario on the simulated cluster (podman, local image).
stage_molecule() {
  local image engine podman_node archive engine_image vllm_image
  image=$("$repo/tests/sim/build-image.sh") || return 1
  # Container mode: a node image with podman, and the engine image as an archive to load.
  engine=$("$repo/tests/sim/build-engine-image.sh" "$image") || return 1
  read -r podman_node archive engine_image <<<"$engine"
  # real_vllm: the node image with a real vLLM (its CPU build) where vllm-ascend would be.
  vllm_image=$("$repo/tests/sim/build-vllm-image.sh" "$image") || return 1
  (cd "$repo" && PATH="$venv/bin:$PATH" ASCEND_SIM_IMAGE="$image" ASCEND_SIM_PODMAN_IMAGE="$podman_node" \
    ASCEND_SIM_ENGINE_ARCHIVE="$archive" ASCEND_SIM_ENGINE_IMAGE="$engine_image" ASCEND_SIM_VLLM_IMAGE="$vllm_image" \
    molecule test --all)
}

# The README's first command: the sandbox, deployed and answering, then removed.
stage_demo() {
  apt_install make || return 1
  local status=0
  (cd "$repo" && make demo) || status=1
  (cd "$repo" && make demo-down) || status=1
  return $status
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=("${all_stages[@]}")
[ "${stages[*]}" = setup ] && { setup; exit; }
for stage in "${stages[@]}"; do
  declare -F "stage_$stage" >/dev/null || { echo "unknown stage: $stage (known: ${all_stages[*]})" >&2; exit 2; }
done

log "setup"
if ! setup; then
  echo "setup failed: nothing was tested" >&2
  exit 1
fi

# The lines of a stage's output that say what failed (CI shows only the end of the output):
# pytest's summary and assertion lines, Ansible's fatal tasks, molecule's failed actions.
why_failed() {
  sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^ *│ \{0,1\}//' "$1" | awk '
    /RETRYING/ { next }
    /^FAILED$/ { getline name; print "FAILED " name; next }  # pytest wraps long test names in molecule boxes
    /^(FAILED|ERROR|Error:)|^E +(assert|AssertionError|fatal: \[|\[ERROR\])|^\[ERROR\]|fatal: \[|Executed: Failed|[0-9]+ failed/' \
    | tail -n 60
  echo "... the stage's last lines:"
  tail -n 12 "$1"
}

passed=0 failed=0 failed_names=()
for stage in "${stages[@]}"; do
  log "$stage"
  start=$SECONDS
  # tee in a process substitution, not a pipe: a process a stage leaves behind holding its output
  # cannot keep the run waiting for an end of file (tee gets 10 s to write out the rest).
  "stage_$stage" > >(tee "$work/$stage.log") 2>&1
  status=$? tee_pid=$!
  for _ in $(seq 100); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.1; done
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1)); echo "--- $stage passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1)); failed_names+=("$stage"); echo "--- $stage FAILED after $((SECONDS - start)) s"
  fi
done

for stage in "${failed_names[@]}"; do
  log "why $stage failed (from its output above)"
  why_failed "$work/$stage.log"
done
echo
[ "$failed" -eq 0 ] || echo "failed stages: ${failed_names[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
