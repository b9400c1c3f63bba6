"""No machine architecture is written into the collection or its tests: package
names, images and tests read it (`uname -m`, facts, the captured install files).
The places below hold one because they quote something captured or record where
a file came from; every other file fails the test."""

import os
import re
import subprocess

from conftest import REPO

# Built from pieces so that this file does not name one itself.
LITERAL = re.compile("|".join(["x86" + "_64", "aarch" + "64", "amd" + "64", "arm" + "64"]))

DOCUMENTED = {
    "plugins/module_utils/engines/vllm_options_0_9_1.py": "the wheel the table was read from (its file name and sha256)",
    "plugins/module_utils/engines/vllm_options_0_11_0.py": "the wheel the table was read from",
    "plugins/module_utils/engines/vllm_options_0_23_0.py": "the wheel the table was read from",
    "plugins/module_utils/engines/vllm_options_0_30_0.py": "the wheel the table was read from",
    "plugins/module_utils/engines/vllm_options_0_32_0.py": "the wheel the table was read from",
    "plugins/module_utils/engines/vllm_options_0_33_0.py": "the wheel the table was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/kv_transfer_config/vllm-0.9.1.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/kv_transfer_config/vllm-0.11.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/kv_transfer_config/vllm-0.23.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.9.1.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.11.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.23.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.30.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.32.0.json": "the wheel it was read from",
    "tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-0.33.0.json": "the wheel it was read from",
    "plugins/modules/cann_packages.py": "maps what the machine reports to the architecture in CANN's package names",
    "plugins/modules/node_probe.py": "RETURN sample: a captured CANN 8.5 install path",
    "tests/sim/build-image.sh": "names a capture file (the 8.5.0 install file of an aarch64 server)",
    "tests/sim/doubles/ascend_sim.py": "maps what `uname -m` prints to CANN's directory names",
    "tests/unit/plugins/module_utils/node/test_cann.py": "expected values of the captured install files",
    "tests/unit/plugins/module_utils/node/test_cann_install.py": "package names as Huawei publishes them: the parser's input",
    "tests/unit/plugins/module_utils/runtime/test_container.py": "quotes a captured install file",
    "tests/unit/plugins/modules/test_cann_packages.py": "maps what the machine reports to CANN's architecture names",
    "tests/unit/plugins/modules/test_node_probe.py": "a CANN tree laid out as the captured 8.5 one",
}
# Whole directories of captures: tool output as the real tools printed it.
CAPTURES = ("tests/unit/plugins/module_utils/node/hardware_samples/", "tests/vllm_help/")


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(REPO, f))
            and not os.path.islink(os.path.join(REPO, f))]


def holds_literal(path):
    with open(os.path.join(REPO, path), "rb") as handle:
        data = handle.read()
    if b"\0" in data:
        return False
    return bool(LITERAL.search(data.decode("utf-8", "replace")))


def test_no_architecture_literal_outside_the_documented_places():
    this = os.path.relpath(__file__, REPO)
    found = {f for f in tracked_files() if f != this and holds_literal(f)}
    undocumented = sorted(f for f in found if f not in DOCUMENTED and not f.startswith(CAPTURES))
    assert not undocumented, "architecture written out (read it from the machine instead): %s" % undocumented


def test_every_documented_place_still_needs_its_exception():
    stale = sorted(f for f in DOCUMENTED if not os.path.isfile(os.path.join(REPO, f)) or not holds_literal(f))
    assert not stale, "remove from DOCUMENTED: %s" % stale


def test_the_check_finds_a_literal():
    assert LITERAL.search("Ascend-cann-nnrt_8.0.RC1_linux-" + "aarch" + "64.run")
    assert not LITERAL.search("Ascend-cann-nnrt_8.0.RC1_linux-{{ ansible_facts.architecture }}.run")
