"""The execution environment definition: `ansible-builder create` writes a build context offline, with
the ansible-core range of requirements.txt, this checkout's collection, and its SSH client found by
ansible-builder's own introspection of the installed collection. (Building the image needs a registry
for the base image; not done here.)"""

import os
import re
import subprocess
import sys

import yaml

from conftest import BIN, REPO


def run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_ansible_builder_writes_the_build_context_offline(tmp_path):
    env = dict(os.environ, ASCEND_VENV=os.path.dirname(BIN))
    env.pop("ANSIBLE_CONFIG", None)
    context = tmp_path / "context"
    run([os.path.join(REPO, "tools", "ee-context.sh"), str(context)], env=env)
    containerfile = (context / "Containerfile").read_text()
    with open(os.path.join(REPO, "requirements.txt")) as handle:
        core = re.search(r"^ansible-core\S+", handle.read(), re.M).group(0)
    assert 'ARG ANSIBLE_INSTALL_REFS="%s ansible-runner"' % core in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" \
        in containerfile
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    tarball = context / "_build" / requirements["collections"][0]["name"]
    assert tarball.is_file(), requirements

    # What the image's galaxy stage does, then the builder stage's introspection: the collection
    # installs from the tarball, and ansible-builder finds its system needs in it.
    installed = tmp_path / "installed"
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "-p", str(installed),
         str(tarball)], env=env, cwd=str(tmp_path))
    collection = installed / "ansible_collections" / "ascend" / "inference"
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    assert '"version": "%s"' % version in (collection / "MANIFEST.json").read_text()
    bindep = tmp_path / "bindep.txt"
    run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect",
         "--write-bindep", str(bindep), str(installed)], env=env)
    assert "openssh-clients [platform:rpm]  # from collection ascend.inference" in bindep.read_text(), \
        bindep.read_text()
