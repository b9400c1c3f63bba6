# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_image, with what it found kept as ascend_applied.image for the phases that run the engine container
(see plugins/modules/engine_image.py for the options and the result)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import APPLIED

display = Display()

KEPT = ("program", "kind", "id", "archive_id", "action", "inside", "error")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        # Read here only: the image ID the node gets once the controller's archive is sent and loaded, and how the
        # phases that run the image run it (kept with what was found).
        expect = args.pop("expect_id", None)
        run = args.pop("run", None)
        result.update(self._execute_module(module_name=self._task.action, module_args=args, task_vars=task_vars))
        if result.get("failed"):
            return result
        found = dict((key, result.get(key)) for key in KEPT)
        if expect and self._play_context.check_mode and not container.same_image(found["id"], expect):
            # A check run sends nothing: the node's image is what the archive would bring, judged then.
            found.update(id=None, inside=None, action="loaded")
            result.update(changed=True, action="loaded")
        found["run"] = run
        plan = self._templar.template(task_vars.get("ascend_plan"))
        if found["inside"] is not None and plan:
            display.display(describe(task_vars.get("inventory_hostname", "?"), plan["cluster"], found))
        so_far = dict(self._templar.template((task_vars.get("ansible_facts") or {}).get(APPLIED)) or {})
        so_far["image"] = found
        result["ansible_facts"] = {APPLIED: so_far}
        return result


def describe(host, cluster, found):
    """One line: the image a node runs and the releases inside it."""
    inside = found["inside"] or {}
    versions = inside.get("versions") or {}
    return "%s: %s (%s), %s %s on vLLM %s, Ray %s, CANN %s, Python %s" % (
        host, cluster["runtime"]["image"], container.short_id(found["id"]) or "to be " + found["action"],
        cluster["engine_distribution"], versions.get(cluster["engine_distribution"]) or "?", versions.get(releases.VLLM_DISTRIBUTION) or "?",
        versions.get("ray") or "none", ", ".join(container.image_cann_versions(inside)) or "not found",
        inside.get("python") or "?")
