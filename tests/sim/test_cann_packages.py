"""The simulated CANN packages (cann/build-cann.sh) install as the cann role expects Huawei's to: the published
flags, each layout's tree, the kernels after the toolkit, nnal with the toolkit's environment, --install-for-all,
a failure on request, and the install file extractable before installing."""

import json
import os
import platform
import stat
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = platform.machine()


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    out = tmp_path_factory.mktemp("packages")
    library = out / "libascendcl.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), os.path.join(HERE, "doubles", "libascendcl.c")],
                   check=True)
    for version, compatible in (("8.0.RC1", "[V100R001C13,V100R001C19],[V100R001C30]"), ("8.5.0", "[V100R001C18]")):
        subprocess.run([os.path.join(HERE, "cann", "build-cann.sh"), version, ARCH, str(out), "V100R001C19SPC001B155",
                        compatible, str(library)], check=True, capture_output=True)
    return out


def install(packages, root, name, *flags, env=None):
    return subprocess.run(["bash", str(packages / name)] + list(flags) + ["--install-path=%s" % root, "--quiet"],
                          capture_output=True, text=True, env=dict(os.environ, **(env or {})), check=False)


def toolkit(version):
    return "Ascend-cann-toolkit_%s_linux-%s.run" % (version, ARCH)


def test_toolkit_layouts_by_version(packages, tmp_path):
    root = tmp_path / "Ascend"
    assert install(packages, root, toolkit("8.0.RC1"), "--full").returncode == 0
    assert os.readlink(str(root / "ascend-toolkit" / "latest")) == "8.0.RC1"
    info = (root / "ascend-toolkit/8.0.RC1" / ("%s-linux" % ARCH) / "ascend_toolkit_install.info").read_text()
    assert "version=8.0.RC1\n" in info and "path=%s/ascend-toolkit/8.0.RC1/%s-linux\n" % (root, ARCH) in info
    assert "compatible_version=[V100R001C13,V100R001C19],[V100R001C30]\n" in info
    assert (root / "ascend-toolkit/set_env.sh").exists()
    assert install(packages, root, toolkit("8.5.0"), "--full").returncode == 0
    assert os.readlink(str(root / "cann")) == "cann-8.5.0" and (root / "cann-8.5.0/set_env.sh").exists()
    assert (root / "cann-8.5.0/lib64/libascendcl.so").exists()


def test_installer_flags_as_published(packages, tmp_path):
    # The toolkit takes --full, the others --install; anything else is refused.
    assert "nothing to do (use --full)" in install(packages, tmp_path, toolkit("8.5.0")).stderr
    assert "unknown option --upgrade" in install(packages, tmp_path, toolkit("8.5.0"), "--upgrade").stderr


def test_kernels_need_the_toolkit_and_nnal_its_environment(packages, tmp_path):
    root = tmp_path / "Ascend"
    kernels = "Ascend-cann-910b-ops_8.5.0_linux-%s.run" % ARCH  # the 8.5 name of the kernels package
    nnal = "Ascend-cann-nnal_8.5.0_linux-%s.run" % ARCH
    assert "install the toolkit first" in install(packages, root, kernels, "--install").stderr
    install(packages, root, toolkit("8.5.0"), "--full")
    assert install(packages, root, kernels, "--install").returncode == 0
    assert (root / "cann-8.5.0/opp_kernel").is_dir()
    assert "source the CANN toolkit's set_env.sh first" in install(packages, root, nnal, "--install").stderr
    done = install(packages, root, nnal, "--install", env={"ASCEND_TOOLKIT_HOME": str(root / "cann-8.5.0")})
    assert done.returncode == 0, done.stderr
    assert "    Ascend-cann-atb : 8.5.0\n" in (root / "nnal/atb/latest/version.info").read_text()


def test_install_for_all_lets_every_account_read(packages, tmp_path):
    private, shared = tmp_path / "private", tmp_path / "shared"
    install(packages, private, toolkit("8.5.0"), "--full")
    install(packages, shared, toolkit("8.5.0"), "--full", "--install-for-all")
    library = "cann-8.5.0/%s-linux/lib64/libascendcl.so" % ARCH
    assert not os.stat(str(private / library)).st_mode & stat.S_IROTH  # makeself's umask 077
    assert os.stat(str(shared / library)).st_mode & stat.S_IROTH


def test_an_installer_fails_on_request(packages, tmp_path):
    state = tmp_path / "etc/ascend-sim/node.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"fail": {"Ascend-cann-toolkit": "install failed, the disk is full"}}))
    done = install(packages, tmp_path / "Ascend", toolkit("8.5.0"), "--full", env={"ASCEND_SIM_ROOT": str(tmp_path)})
    assert done.returncode != 0 and "Ascend-cann-toolkit: install failed, the disk is full" in done.stderr
    assert not (tmp_path / "Ascend/cann-8.5.0").exists()


def test_the_install_file_is_readable_before_installing(packages, tmp_path):
    out = tmp_path / "extracted"
    subprocess.run(["bash", str(packages / toolkit("8.5.0")), "--noexec", "--extract=%s" % out, "--quiet"],
                   check=True, capture_output=True)
    assert "compatible_version=[V100R001C18]\n" in (out / "ascend_toolkit_install.info").read_text()
