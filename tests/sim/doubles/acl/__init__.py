"""pyACL test double: the two calls Ray makes to detect Ascend NPUs.

Installed by the simulated Ascend-pyACL .run package, so it is only
importable once its site-packages directory is on PYTHONPATH, as on a real
node. Devices come from /dev/davinciN, narrowed by ASCEND_RT_VISIBLE_DEVICES
like the real runtime; the SoC name from the node's state file.
"""

import glob
import json
import os


def _root(name):
    return os.path.join(os.environ.get("ASCEND_SIM_ROOT", "/"), name.lstrip("/"))


def _devices():
    ids = sorted(int(p.rsplit("davinci", 1)[1]) for p in glob.glob(_root("/dev/davinci[0-9]*")))
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    if visible is None:
        return ids
    wanted = [int(v) for v in visible.split(",") if v.strip().isdigit()]
    return [d for d in wanted if d in ids]


class _Runtime:
    @staticmethod
    def get_device_count():
        """(count, ret) like pyACL: ret 0 on success."""
        return len(_devices()), 0


rt = _Runtime()


def get_soc_name():
    try:
        with open(_root("/etc/ascend-sim/node.json")) as handle:
            return json.load(handle).get("soc_name", "Ascend910B1")
    except FileNotFoundError:
        return "Ascend910B1"
