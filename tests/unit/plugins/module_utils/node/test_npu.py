# -*- coding: utf-8 -*-
"""NPU chips from npu-smi: every capture in hardware_samples/ that the collection reads.

Each expected value is written out by hand from the named capture.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.node import npu


def chips_of(rows):
    """(card, chip, logic) of the rows that have a logic ID."""
    return [(r["card"], r["chip"], r["logic"]) for r in rows if r["logic"] is not None]


def test_chip_map_910b4_800i_a2(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__910B4_800I-A2_25.0.rc1.1__1.txt"))
    assert chips_of(rows) == [(n, 0, n) for n in range(8)]
    assert set(r["name"] for r in rows if r["logic"] is not None) == {"Ascend 910B4"}
    assert [(r["card"], r["chip"], r["name"]) for r in rows if r["logic"] is None] == [(n, 1, "Mcu") for n in range(8)]
    assert all(r["physical"] is None for r in rows)


def test_chip_map_910b_atlas_a2_placeholder_names(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__910B_atlas-A2__1.txt"))
    assert chips_of(rows) == [(n, 0, n) for n in range(8)]
    assert rows[0]["name"] == "Ascend xxx" and rows[1]["name"] == "Mcu"


def test_chip_map_300i_duo_two_chips_per_card_sparse_ids(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__310P_atlas300I-duo__1.txt"))
    assert chips_of(rows) == [(1, 0, 0), (1, 1, 1), (2, 0, 2), (2, 1, 3), (4, 0, 4), (4, 1, 5), (5, 0, 6), (5, 1, 7)]
    assert [(r["card"], r["chip"]) for r in rows if r["name"] == "Mcu"] == [(1, 2), (2, 2), (4, 2), (5, 2)]


def test_chip_map_310_four_chips_on_one_card(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__atlas800-3000_310_npu-smi-21.0.4__1.txt"))
    assert chips_of(rows) == [(6, 0, 0), (6, 1, 1), (6, 2, 2), (6, 3, 3)]
    assert rows[-1] == {"card": 6, "chip": 4, "logic": None, "physical": None, "name": "Mcu"}
    old = npu.parse_chip_map(sample("npu-smi-info-m__atlas800-3000_310_npu-smi-20.2.0__1.txt"))
    assert chips_of(old) == [(215, 0, 0), (215, 1, 1), (215, 2, 2), (215, 3, 3)]
    assert old[0]["name"] == "MiniD"


def test_chip_map_910a_without_mcu_rows(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__atlas800-9010_910A_npu-smi-22.0.3.1__1.txt"))
    assert chips_of(rows) == [(n, 0, n) for n in range(8)]
    assert rows[7]["name"] == "Ascend 910A"


def test_chip_map_ascend950_has_a_phy_id_and_no_logic_id(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__ascend950_doc-example__1.txt"))
    assert rows == [{"card": 0, "chip": 0, "logic": None, "physical": 0, "name": "xxx"}]


def test_chip_map_of_nothing():
    assert npu.parse_chip_map("") == [] and npu.parse_chip_map(None) == []


def test_summary_a3_two_dies_per_card_with_phy_ids(sample):
    chips = npu.parse_summary(sample("npu-smi-info__A3_910C-Ascend910_16die_25.2.0__1.txt"))
    assert [(c["card"], c["chip"], c["physical"]) for c in chips] == [
        (card, die, 2 * card + die) for card in range(8) for die in (0, 1)]
    assert set(c["name"] for c in chips) == {"Ascend910"} and set(c["health"] for c in chips) == {"OK"}
    assert chips[0]["bus_id"] == "0000:9D:00.0" and chips[15]["bus_id"] == "0000:83:00.0"


def test_summary_300i_duo_device_column_is_not_taken_for_a_physical_id(sample):
    chips = npu.parse_summary(sample("npu-smi-info__310P3_300I-Duo-x4_24.1.0.1__1.txt"))
    assert [(c["card"], c["chip"], c["physical"]) for c in chips] == [
        (card, chip, None) for card in (1536, 1792, 2048, 2304) for chip in (0, 1)]
    assert chips[0]["name"] == "310P3" and chips[0]["bus_id"] == "0000:06:00.0"


def test_summary_910b4_one_chip_per_card(sample):
    for name in ("npu-smi-info__910B4_800I-A2_25.0.rc1.1__1.txt", "npu-smi-info__910B4_800I-A2_24.1.rc3__1.txt"):
        chips = npu.parse_summary(sample(name))
        assert [(c["card"], c["chip"], c["physical"], c["name"]) for c in chips] == [
            (n, 0, None, "910B4") for n in range(8)], name


def test_summary_elided_910b1_and_other_generations(sample):
    elided = npu.parse_summary(sample("npu-smi-info__910B1_atlas-A2_23.0.rc2__1.txt"))
    assert [(c["card"], c["name"]) for c in elided] == [(0, "910B1"), (1, "910B1"), (7, "910B1")]
    assert [(c["card"], c["chip"]) for c in npu.parse_summary(
        sample("npu-smi-info__atlas800-3000_310_npu-smi-21.0.4__1.txt"))] == [(6, 0), (6, 1), (6, 2), (6, 3)]
    assert [c["name"] for c in npu.parse_summary(
        sample("npu-smi-info__atlas800-9010_910A_npu-smi-22.0.3.1__1.txt"))] == ["910A"] * 8
    # The process table of the 910ProB capture (rows "| 0  0 | 55115 |") is not taken for chips.
    assert [(c["card"], c["name"]) for c in npu.parse_summary(
        sample("npu-smi-info__910ProB_23.0.rc1__1.txt"))] == [(0, "910ProB")]
    assert [c["name"] for c in npu.parse_summary(
        sample("npu-smi-info__910B-name_DDR15038-HBM32G_24.1.0__1.txt"))] == ["910B"] * 8


def test_summary_of_the_other_captures(sample):
    old310 = npu.parse_summary(sample("npu-smi-info__atlas800-3000_310_npu-smi-20.2.0__1.txt"))
    assert [(c["card"], c["chip"], c["physical"], c["name"]) for c in old310] == [(215, n, None, "310") for n in range(4)]
    first910 = npu.parse_summary(sample("npu-smi-info__atlas800-9010_910_npu-smi-24.1.RC2__1.txt"))
    assert [(c["card"], c["chip"], c["name"]) for c in first910] == [(n, 0, "xxx") for n in range(8)]
    assert [c["card"] for c in first910 if c["health"] == "Warning"] == [3, 7]
    busy = npu.parse_summary(sample("npu-smi-info__910B1_23.0.rc2.b090__1.txt"))
    assert [(c["card"], c["name"]) for c in busy] == [(0, "910B1"), (7, "910B1")]  # the publisher elided 1-6
    # The Ascend 950 table has another layout (an NPU ID column of its own): that generation is not supported.
    assert npu.parse_summary(sample("npu-smi-info__ascend950_doc-example__1.txt")) == []


@pytest.mark.parametrize("names,per_card,family", [
    (["910B4", "Ascend 910B4"], 1, "910B"),
    (["Ascend910"], 2, "910_93"),
    (["310P3"], 2, "310P"),
    (["Ascend 910A"], 1, "910"),
    (["910ProB"], 1, "910"),
    # npu-smi-info__910B-name_DDR15038-HBM32G_24.1.0__1.txt: a bare "910B" board with DDR, an older 910.
    (["910B"], 1, "910"),
    (["Ascend910B2C"], 1, "910B"),
    (["MiniD"], 4, "310"),
    (["310"], 4, "310"),
    (["Ascend xxx"], 1, "unknown"),
])
def test_family(names, per_card, family):
    assert npu.family(names, per_card) == family


def test_phyid_remap_source_format():
    # npu-smi's source (hicann/driver npu_chip_info.c): "\t%-30s:%lu"; no capture from an A2/A3 host exists.
    text = "\tChip Physical ID              :6\n\tChip Logic ID                 :6\n" \
           "\tNPU ID                        :3\n\tChip ID                       :0\n"
    assert npu.parse_phyid_remap(text) == {"logic": 6, "card": 3, "chip": 0}
    # Huawei's Atlas 200I A2 documentation example: fewer spaces, the same keys.
    assert npu.parse_phyid_remap(" Chip Physical ID            :0\n Chip Logic ID               :0\n"
                                 " NPU ID                      :0\n Chip ID                     :0\n")["logic"] == 0
    # Not supported: the source prints this and exits 0, so the answer must hold the keys.
    assert npu.parse_phyid_remap("This device does not support querying phyid-remap.\n") is None


def a3_chip_map():
    """A3 `npu-smi info -m` in the source's five-column form (no capture exists)."""
    return [{"card": c, "chip": d, "logic": 2 * c + d, "physical": None, "name": "Ascend910"}
            for c in range(8) for d in (0, 1)]


def test_resolve_on_an_a2_host_physical_is_logic(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__910B4_800I-A2_25.0.rc1.1__1.txt"))
    summary = npu.parse_summary(sample("npu-smi-info__910B4_800I-A2_25.0.rc1.1__1.txt"))
    chips, problems = npu.resolve(rows, summary, {}, list(range(8)))
    assert problems == []
    assert [(c["logic"], c["physical"]) for c in chips] == [(n, n) for n in range(8)]
    assert chips[0]["physical_from"] == "the logic ID, as on a host" and chips[0]["name"] == "910B4"
    assert npu.describe(chips, summary)["family"] == "910B"


def test_resolve_a3_takes_the_table_phy_ids(sample):
    summary = npu.parse_summary(sample("npu-smi-info__A3_910C-Ascend910_16die_25.2.0__1.txt"))
    chips, problems = npu.resolve(a3_chip_map(), summary, {}, list(range(16)))
    assert problems == [] and len(chips) == 16
    assert chips[3] == {"card": 1, "chip": 1, "logic": 3, "physical": 3, "name": "Ascend910",
                        "physical_from": "npu-smi info (Phy-ID)"}
    info = npu.describe(chips, summary)
    assert (info["family"], info["chips_per_card"], info["npu_network"]) == ("910_93", 2, True)


def test_resolve_300i_duo_eight_devices_no_network(sample):
    rows = npu.parse_chip_map(sample("npu-smi-info-m__310P_atlas300I-duo__1.txt"))
    chips, problems = npu.resolve(rows, [], {}, list(range(8)))
    assert problems == [] and [c["logic"] for c in chips] == list(range(8))
    assert [c["card"] for c in chips] == [1, 1, 2, 2, 4, 4, 5, 5]
    # The -m capture names chips "Ascend xxx": the names in the table (another Duo host's capture) tell the family.
    info = npu.describe(chips, npu.parse_summary(sample("npu-smi-info__310P3_300I-Duo-x4_24.1.0.1__1.txt")))
    assert (info["family"], info["npu_network"]) == ("310P", False)


def test_resolve_in_a_container_uses_phyid_remap():
    # A container given /dev/davinci4..7: logic IDs 0..3 map to physical 4..7.
    rows = [{"card": c, "chip": 0, "logic": c, "physical": None, "name": "Ascend 910B1"} for c in range(4)]
    remaps = dict((4 + n, {"logic": n, "card": n, "chip": 0}) for n in range(4))
    chips, problems = npu.resolve(rows, [], remaps, [4, 5, 6, 7])
    assert problems == []
    assert [(c["logic"], c["physical"], c["physical_from"]) for c in chips] == [
        (n, 4 + n, "npu-smi info -t phyid-remap") for n in range(4)]


def test_resolve_an_explicit_map_wins():
    rows = [{"card": c, "chip": 0, "logic": c, "physical": None, "name": "Ascend 910B1"} for c in range(2)]
    chips, problems = npu.resolve(rows, [], {}, [6, 7], explicit={"0": 6, 1: "7"})
    assert problems == [] and [c["physical"] for c in chips] == [6, 7]
    assert chips[0]["physical_from"] == "ascend_npu_device_map"


def test_resolve_names_both_numbers_where_tools_and_files_disagree():
    rows = [{"card": c, "chip": 0, "logic": c, "physical": None, "name": "Ascend 910B1"} for c in range(4)]
    chips, problems = npu.resolve(rows, [], {}, [0, 1, 2, 5])
    assert problems == [
        {"logic": 3, "message": "NPU 3 chip 0 (logic ID 3) has no /dev/davinci3 (physical ID from the logic ID, "
                                "as on a host; found /dev/davinci0-2,5)"},
        {"logic": None, "message": "/dev/davinci5 has no chip in npu-smi info -m (chips map to physical IDs 0-3)"},
    ]
    _chips, clash = npu.resolve(rows[:2], [], {}, [0], explicit={0: 0, 1: 0})
    assert clash == [{"logic": None, "message": "physical ID 0 is given to several chips (logic IDs 0-1): "
                                                "set ascend_npu_device_map"}]


def test_the_ascend_950_table_yields_no_chip(sample):
    # Its -m table has a Phy-ID and no logic ID: that generation is not supported, and the preflight says so.
    rows = npu.parse_chip_map(sample("npu-smi-info-m__ascend950_doc-example__1.txt"))
    chips, problems = npu.resolve(rows, [], {}, [0])
    assert chips == [] and [p["message"] for p in problems] == [
        "/dev/davinci0 has no chip in npu-smi info -m (chips map to physical IDs none)"]
