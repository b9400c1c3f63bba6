"""The code map (docs/development/architecture.md) names every file under plugins/ in its folder's section, and each
package's __init__.py says what its folder decides, in a docstring and nothing else."""

import ast
import glob
import os
import re

from conftest import REPO

MAP = os.path.join(REPO, "docs", "development", "architecture.md")
PLUGINS = os.path.join(REPO, "plugins")


def sections(text):
    """{folder relative to the repository: set of file names its section lists}, from the '### `plugins/x/`'
    headings (one heading may name several folders) and the `name.py` in the lines below each."""
    found, current = {}, []
    for line in text.splitlines():
        if line.startswith("#"):
            current = re.findall(r"`(plugins/[a-z_/]+/)`", line) if line.startswith("### ") else []
            for folder in current:
                found.setdefault(folder.rstrip("/"), set())
        elif current:
            for folder in current:
                found[folder.rstrip("/")].update(re.findall(r"`([a-z0-9_]+\.py)`", line))
    return found


def on_disk():
    found = {}
    for path in glob.glob(os.path.join(PLUGINS, "**", "*.py"), recursive=True):
        if os.path.basename(path) != "__init__.py":
            found.setdefault(os.path.relpath(os.path.dirname(path), REPO), set()).add(os.path.basename(path))
    return found


def test_the_code_map_names_every_file_in_its_folder():
    with open(MAP) as handle:
        mapped = sections(handle.read())
    disk = on_disk()
    missing = ["%s/%s" % (folder, name) for folder, names in sorted(disk.items())
               for name in sorted(names - mapped.get(folder, set()))]
    gone = ["%s/%s" % (folder, name) for folder, names in sorted(mapped.items())
            for name in sorted(names - disk.get(folder, set()))]
    assert not missing, "files the code map does not name: %s" % ", ".join(missing)
    assert not gone, "files the code map names that are not there: %s" % ", ".join(gone)


def test_the_check_sees_a_file_left_out():
    mapped = sections("### `plugins/module_utils/plan/`\n\n- `planner.py`: one model.\n\n## Next\n- `fleet.py`\n")
    assert mapped == {"plugins/module_utils/plan": {"planner.py"}}


def test_every_package_says_what_its_folder_decides_and_holds_no_code():
    folders = [os.path.dirname(path) for path in glob.glob(os.path.join(PLUGINS, "*_utils", "*", "*.py"))]
    assert folders
    for folder in sorted(set(folders)):
        init = os.path.join(folder, "__init__.py")
        assert os.path.isfile(init), "%s has no __init__.py" % os.path.relpath(folder, REPO)
        with open(init) as handle:
            body = ast.parse(handle.read()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body[0].value.value) > 100, init
