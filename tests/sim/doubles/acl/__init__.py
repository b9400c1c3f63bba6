"""pyACL test double: the two calls Ray makes to detect Ascend NPUs.

Installed by the simulated Ascend-pyACL .run package, so it is only
importable once its site-packages directory is on PYTHONPATH, as on a real
node; and like the real module it loads libascendcl.so, which the dynamic
loader finds only through the CANN environment (set_env.sh's LD_LIBRARY_PATH):
without it the import fails with the real message
(hardware-samples/python-import-error__aclruntime-libascendcl_no-set_env__1.txt).
Devices are the node's chips (logic IDs) whose /dev/davinciN exists, narrowed
by ASCEND_RT_VISIBLE_DEVICES like the real runtime; the SoC name comes from the
node's state file.
"""

import ctypes
import os
import sys

try:
    ctypes.CDLL("libascendcl.so")
except OSError as _error:
    raise ImportError(str(_error))

sys.path.insert(0, os.environ.get("ASCEND_SIM_LIB", "/usr/local/lib/ascend-sim"))
import ascend_sim  # noqa: E402


class _Runtime:
    @staticmethod
    def get_device_count():
        """(count, ret) like pyACL: ret 0 on success, non-zero on a bad ASCEND_RT_VISIBLE_DEVICES (value not captured)."""
        try:
            return len(ascend_sim.visible_logic_ids()), 0
        except RuntimeError:
            return 0, 1


rt = _Runtime()


def get_soc_name():
    return ascend_sim.load_state()["soc_name"]
