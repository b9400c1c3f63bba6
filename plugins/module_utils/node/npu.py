# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU chips of a node, from what npu-smi prints (pure logic).

Three numberings meet on an Ascend node (Huawei CANN and npu-smi documentation):

- the NPU ID of ``npu-smi info -l`` numbers cards, which may hold two chips
  (Atlas 300I Duo, Atlas A3) and need not be dense (1, 2, 4, 5) or small (1792);
- the Chip Logic ID of ``npu-smi info -m`` numbers chips for the runtime:
  ``ASCEND_RT_VISIBLE_DEVICES`` (and so ``ascend_npu_devices``) takes it;
- the physical ID numbers ``/dev/davinciN`` and is what ``hccn_tool -i`` takes.
  ``npu-smi info -t phyid-remap -p N`` maps a physical ID back to its logic ID;
  the ``npu-smi info`` table of Atlas A3 shows it as Phy-ID; on a host (not in a
  container) it equals the logic ID.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

BUS_ID = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
COLUMN_GAP = re.compile(r"\s{2,}")

# NPU families (family() tells them by name and chips per card): key: (description, has an NPU network).
FAMILIES = {
    "910B": ("Atlas A2 (Ascend 910B)", True),
    "910_93": ("Atlas A3 (Ascend 910_93, two dies per card)", True),
    "310P": ("Atlas 300I Duo / 300I Pro (Ascend 310P)", False),
    "910": ("Atlas 800 training (Ascend 910, first generation)", True),
    "310": ("Atlas 300 / 800 inference (Ascend 310)", False),
    "unknown": ("unknown NPU family", True),
}


def _int(text):
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def parse_chip_map(text):
    """Rows of ``npu-smi info -m``: card, chip, logic (None on Mcu rows), physical (where shown), name.

    Columns are found by the header's names (separated by two or more spaces), so
    the four-column table (NPU ID, Chip ID, Chip Logic ID, Chip Name), the Atlas A3 one
    with Chip Phy-ID, and the Ascend 950 one (NPU ID, Slot ID, Chip ID, Chip Phy-ID,
    Chip Name) all parse; the 950's has no logic ID, so resolve() finds no chip there
    (that generation is not supported).
    """
    rows, header = [], None
    for line in (text or "").splitlines():
        cells = COLUMN_GAP.split(line.strip())
        if not cells or not cells[0]:
            continue
        if header is None:
            if cells[0] == "NPU ID":
                header = cells
            continue
        if len(cells) < len(header) - 1 or _int(cells[0]) is None:
            continue
        values = dict(zip(header, cells))
        name = values.get("Chip Name", "").strip()
        rows.append({
            "card": _int(values.get("NPU ID")),
            "chip": _int(values.get("Chip ID")),
            "logic": _int(values.get("Chip Logic ID")),
            "physical": _int(values.get("Chip Phy-ID")),
            "name": name,
        })
    return rows


def parse_summary(text):
    """Chips of the ``npu-smi info`` table: card, name, health, chip, physical (Phy-ID), bus_id.

    Each chip takes two table lines: ``| NPU Name | Health | ...`` then
    ``| Chip [Phy-ID|Device] | Bus-Id | ...``. Only an Atlas A3 table has the
    Phy-ID column; the Device column of older tables is not read (no capture
    shows what it numbers). The process table below the chips is ignored.
    """
    chips, second_column, card = [], None, None
    for line in (text or "").splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        first = cells[0].split()
        if "Process id" in line:
            break
        if first[:1] == ["Chip"] and len(cells) > 1 and cells[1].startswith("Bus-Id"):
            second_column = first[1] if len(first) > 1 else None
            continue
        if len(first) >= 2 and _int(first[0]) is not None and len(cells) > 1 and not BUS_ID.match(cells[1]):
            card = {"card": int(first[0]), "name": " ".join(first[1:]), "health": cells[1]}
            continue
        if card is not None and first and _int(first[0]) is not None and len(cells) > 1 and BUS_ID.match(cells[1]):
            physical = _int(first[1]) if second_column == "Phy-ID" and len(first) > 1 else None
            chips.append(dict(card, chip=int(first[0]), physical=physical, bus_id=cells[1]))
            card = None
    return chips


def parse_phyid_remap(text):
    """``npu-smi info -t phyid-remap -p N``: {"logic", "card", "chip"} or None when unreadable."""
    found = {}
    for key, name in (("logic", r"Chip Logic ID"), ("card", r"NPU ID"), ("chip", r"Chip ID")):
        match = re.search(r"^\s*%s\s*:\s*(\d+)\s*$" % name, text or "", re.M)
        if match:
            found[key] = int(match.group(1))
    return found if "logic" in found else None


def family(names, chips_per_card):
    """The NPU family key of FAMILIES from chip or card names and the largest chip count per card."""
    text = " ".join(names)
    # 910B1..910B4 (and 910B2C, 910B4-1); a bare "910B" names an older 910 board (hardware-samples).
    if re.search(r"910B\d", text):
        return "910B"
    if re.search(r"910_93|910C", text):
        return "910_93"
    if re.search(r"310P", text):
        return "310P"
    if re.search(r"910", text):
        # npu-smi names A3 dies "Ascend910": two chips per card tell them from the first 910.
        return "910_93" if chips_per_card >= 2 else "910"
    if re.search(r"\b310\b|MiniD", text):
        return "310"
    return "unknown"


def _span(numbers):
    """'0-3,6' for [0, 1, 2, 3, 6]."""
    numbers, parts = sorted(numbers), []
    for number in numbers:
        if parts and number == parts[-1][1] + 1:
            parts[-1][1] = number
        else:
            parts.append([number, number])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


def resolve(chip_map, summary, remaps, device_files, explicit=None):
    """The node's chips with their logic and physical IDs, and what disagrees.

    chip_map: parse_chip_map rows; summary: parse_summary rows; remaps:
    {physical: parse_phyid_remap result or None}; device_files: N of every
    /dev/davinciN; explicit: {logic: physical} from the inventory (ascend_npu_device_map).

    Returns (chips, problems): chips sorted by logic ID, each {card, chip, logic,
    physical, name, physical_from}; problems ({logic, message}, logic None where no
    single chip is concerned) name both numbers where the tools disagree.
    """
    explicit = {int(k): int(v) for k, v in (explicit or {}).items()}
    by_remap = {r["logic"]: phys for phys, r in (remaps or {}).items() if r}
    by_table = {(c["card"], c["chip"]): c["physical"] for c in summary if c.get("physical") is not None}
    names = {(c["card"], c["chip"]): c["name"] for c in summary}
    chips, problems = [], []
    for row in chip_map:
        if row["logic"] is None:  # Mcu rows and other parts without a logic ID
            continue
        key = (row["card"], row["chip"])
        if row["logic"] in explicit:
            physical, source = explicit[row["logic"]], "ascend_npu_device_map"
        elif row["physical"] is not None:
            physical, source = row["physical"], "npu-smi info -m"
        elif row["logic"] in by_remap:
            physical, source = by_remap[row["logic"]], "npu-smi info -t phyid-remap"
        elif key in by_table:
            physical, source = by_table[key], "npu-smi info (Phy-ID)"
        else:
            physical, source = row["logic"], "the logic ID, as on a host"
        chips.append({"card": row["card"], "chip": row["chip"], "logic": row["logic"], "physical": physical,
                      "name": names.get(key) or row["name"], "physical_from": source})
    chips.sort(key=lambda c: c["logic"])
    files = set(device_files)
    for chip in chips:
        if chip["physical"] not in files:
            message = "NPU %s chip %s (logic ID %d) has no /dev/davinci%d (physical ID from %s; found /dev/davinci%s)" \
                % (chip["card"], chip["chip"], chip["logic"], chip["physical"], chip["physical_from"],
                   _span(files) or " none")
            problems.append({"logic": chip["logic"], "message": message})
    mapped = [c["physical"] for c in chips]
    for physical in sorted(set(p for p in mapped if mapped.count(p) > 1)):
        problems.append({"logic": None, "message": "physical ID %d is given to several chips (logic IDs %s): "
                         "set ascend_npu_device_map"
                         % (physical, _span(c["logic"] for c in chips if c["physical"] == physical))})
    for physical in sorted(files - set(mapped)):
        problems.append({"logic": None, "message": "/dev/davinci%d has no chip in npu-smi info -m (chips map to "
                         "physical IDs %s)" % (physical, _span(mapped) or "none")})
    return chips, problems


def describe(chips, summary):
    """{family, family_name, npu_network, chips_per_card} of a node's chips."""
    per_card = {}
    for chip in chips:
        per_card[chip["card"]] = per_card.get(chip["card"], 0) + 1
    names = [c["name"] for c in summary] + [c["name"] for c in chips]
    key = family(names, max(per_card.values()) if per_card else 0)
    return {"family": key, "family_name": FAMILIES[key][0], "npu_network": FAMILIES[key][1],
            "chips_per_card": max(per_card.values()) if per_card else 0}
