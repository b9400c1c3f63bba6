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
py_version=3.11
venv="$repo/.venv"               # ansible, ansible-lint, molecule, pytest
test_venv="$cache/venv-ansible-test"  # ansible-test and the pins it installs itself
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

# Recreate a virtualenv only when its requirements change.
ensure_venv() {
  local dir=$1; shift
  local stamp
  stamp=$(printf '%s\n' "$@" | cat - "$repo/requirements.txt" | sha256sum | cut -d' ' -f1)
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then return 0; fi
  log "creating $dir"
  rm -rf "$dir"
  "$python" -m venv "$dir" || return 1
  "$dir/bin/pip" install -q --upgrade pip || return 1
  "$dir/bin/pip" install -q "$@" || return 1
  echo "$stamp" > "$dir/.stamp"
}

setup() {
  command -v "$python" >/dev/null || apt_install python3 || return 1
  "$python" -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv || return 1
  # systemd: its systemd-analyze checks the serve unit (integration; the test fails without it).
  apt_install git shellcheck systemd || return 1
  ensure_venv "$venv" -r "$repo/requirements.txt" || return 1
  ensure_venv "$test_venv" "$(grep '^ansible-core' "$repo/requirements.txt")" || return 1
  # ansible-test bootstraps pip in each venv it creates with a script from a
  # host these machines cannot reach; give it an offline stand-in.
  local pip_version
  pip_version=$(grep -oP "pip='\K[0-9.]+" "$test_venv"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py)
  mkdir -p ~/.ansible/test/cache/pip-wheels
  cp "$repo/tests/sanity/get_pip_standin.py" ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
  ls ~/.ansible/test/cache/pip-wheels/pip-"$pip_version"-*.whl >/dev/null 2>&1 \
    || "$venv/bin/pip" download -q --no-deps -d ~/.ansible/test/cache/pip-wheels "pip==$pip_version"
  # The collection as Ansible finds it from this checkout (see ansible.cfg).
  mkdir -p "$cache/collections/ansible_collections/ascend"
  ln -sfn ../../../.. "$cache/collections/ansible_collections/ascend/inference"
}

# ansible-test needs the files under ansible_collections/ascend/inference,
# outside this git checkout (inside it, git would report them as ignored).
work=$(mktemp -d "${TMPDIR:-/tmp}/ascend-inference-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree() { "$repo/tests/build-tree.sh" "$work"; }

stage_lint() {
  (cd "$repo" && "$venv/bin/ansible-lint" --offline)
}

stage_sanity() {
  local dir; dir=$(tree) || return 1
  (cd "$dir" && PATH="$test_venv/bin:$PATH" ansible-test sanity --local --requirements --python "$py_version")
}

stage_units() {
  local dir; dir=$(tree) || return 1
  (cd "$dir" && PATH="$test_venv/bin:$PATH" ansible-test units --local --requirements --python "$py_version")
}

stage_integration() {
  (cd "$repo" && "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/integration)
}

# The hardware test doubles themselves, on this machine.
stage_sim() {
  "$repo/tests/sim/setup-host.sh" || return 1
  (cd "$repo" && "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/sim)
}

# Every molecule scenario on the simulated cluster (podman, local image).
stage_molecule() {
  local image engine podman_node archive engine_image
  image=$("$repo/tests/sim/build-image.sh") || return 1
  # Container mode: a node image with podman, and the engine image as an archive to load.
  engine=$("$repo/tests/sim/build-engine-image.sh" "$image") || return 1
  read -r podman_node archive engine_image <<<"$engine"
  (cd "$repo" && PATH="$venv/bin:$PATH" ASCEND_SIM_IMAGE="$image" ASCEND_SIM_PODMAN_IMAGE="$podman_node" \
    ASCEND_SIM_ENGINE_ARCHIVE="$archive" ASCEND_SIM_ENGINE_IMAGE="$engine_image" molecule test --all)
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

passed=0 failed=0 failed_names=()
for stage in "${stages[@]}"; do
  log "$stage"
  start=$SECONDS
  if "stage_$stage"; then
    passed=$((passed + 1)); echo "--- $stage passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1)); failed_names+=("$stage"); echo "--- $stage FAILED after $((SECONDS - start)) s"
  fi
done

echo
[ "$failed" -eq 0 ] || echo "failed stages: ${failed_names[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
