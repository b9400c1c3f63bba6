# -*- coding: utf-8 -*-
"""node_apply on this machine's files: written once, corrected, reported per path, secrets kept out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd
import stat

from ansible_collections.ascend.inference.plugins.module_utils.apply import files
from ansible_collections.ascend.inference.plugins.modules import node_apply

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def spec(tmp_path, env="A=1\n", secret="TOKEN=abc123\n", **extra):
    base = str(tmp_path / "etc")
    return dict({
        "directories": [{"path": base, "mode": "0750", "owner": ME, "group": MY_GROUP}],
        "files": [
            {"path": base + "/node.env", "content": env, "mode": "0644", "owner": ME, "group": MY_GROUP},
            {"path": base + "/secrets.env", "mode": "0600", "owner": ME, "group": MY_GROUP},
        ],
        "secrets": {base + "/secrets.env": secret},
    }, **extra)


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_writes_everything_once(run_module, tmp_path):
    first = run_module(node_apply.main, spec(tmp_path)).result
    base = tmp_path / "etc"
    assert first["changed"] and first["changed_paths"] == [str(base), str(base / "node.env"), str(base / "secrets.env")]
    assert first["paths"][str(base / "node.env")] == ["created"]
    assert (base / "node.env").read_text() == "A=1\n" and (base / "secrets.env").read_text() == "TOKEN=abc123\n"
    assert (mode_of(base), mode_of(base / "node.env"), mode_of(base / "secrets.env")) == (0o750, 0o644, 0o600)
    second = run_module(node_apply.main, spec(tmp_path)).result
    assert not second["changed"] and second["changed_paths"] == []
    assert all(changes == [] for changes in second["paths"].values())
    assert sorted(os.listdir(str(base))) == ["node.env", "secrets.env"]  # no temporary left


def test_reports_only_what_changed(run_module, tmp_path):
    run_module(node_apply.main, spec(tmp_path))
    base = tmp_path / "etc"
    os.chmod(str(base / "secrets.env"), 0o644)
    done = run_module(node_apply.main, dict(spec(tmp_path, env="A=2\n"), _ansible_diff=True)).result
    assert done["changed_paths"] == [str(base / "node.env"), str(base / "secrets.env")]
    assert done["paths"][str(base / "node.env")] == ["content"]
    assert done["paths"][str(base / "secrets.env")] == ["mode"]
    assert mode_of(base / "secrets.env") == 0o600 and (base / "node.env").read_text() == "A=2\n"
    assert [entry["before"] for entry in done["diff"]] == ["A=1\n", {"mode": "0644"}]


def test_a_secret_never_reaches_the_result(run_module, tmp_path):
    run_module(node_apply.main, spec(tmp_path))
    done = run_module(node_apply.main, dict(spec(tmp_path, secret="TOKEN=xyz789\n"), _ansible_diff=True)).result
    assert done["changed_paths"] == [str(tmp_path / "etc" / "secrets.env")]
    assert "abc123" not in repr(done) and "xyz789" not in repr(done)
    assert "secret content" in done["diff"][0]["after"]


def test_the_secret_is_masked_in_any_output(run_module, monkeypatch, tmp_path):
    # AnsibleModule removes the values of no_log options from everything it returns.
    from ansible.module_utils import basic
    seen = {}
    finish = basic.AnsibleModule.exit_json  # run_module's

    def exit_json(self, **kwargs):
        seen.update(no_log_values=self.no_log_values)
        finish(self, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    run_module(node_apply.main, spec(tmp_path, secret="TOKEN=abc123\n"))
    assert "TOKEN=abc123\n" in seen["no_log_values"] and "A=1\n" not in seen["no_log_values"]


def test_a_multi_line_secret_stays_out_of_the_nodes_journal(run_module, monkeypatch, tmp_path):
    # AnsibleModule logs its invocation to the journal; a secret inside the files list would be logged with
    # escaped newlines, which its masking does not recognise (molecule serve_mp found the API key there).
    from ansible.module_utils import basic
    logged = []
    monkeypatch.setattr(basic.AnsibleModule, "_log_to_syslog", lambda self, msg: logged.append(msg))
    monkeypatch.setattr(basic, "has_journal", False)
    run_module(node_apply.main, spec(tmp_path, secret="TOKEN=abc123\nKEY=def456\n"))
    assert any("Invoked with" in msg for msg in logged) and "node.env" in " ".join(logged)
    assert not any("abc123" in msg or "def456" in msg for msg in logged)


def test_content_comes_from_content_or_secrets_exactly_once(run_module, tmp_path):
    both = spec(tmp_path)
    both["files"][1]["content"] = "TOKEN=visible\n"
    assert run_module(node_apply.main, both).result["msg"].endswith(
        "secrets.env: give its content either as content or in secrets, not both")
    neither = spec(tmp_path)
    neither["secrets"] = {}
    assert run_module(node_apply.main, neither).result["msg"].endswith(
        "secrets.env: give its content either as content or in secrets, not neither")
    stray = spec(tmp_path)
    stray["secrets"][str(tmp_path / "other.env")] = "X=1\n"
    assert run_module(node_apply.main, stray).result["msg"] == "secrets for paths not in files: %s" % (
        tmp_path / "other.env")
    assert not (tmp_path / "etc").exists()


def test_check_mode_writes_nothing(run_module, tmp_path):
    done = run_module(node_apply.main, dict(spec(tmp_path), _ansible_check_mode=True, _ansible_diff=True)).result
    assert done["changed"] and len(done["changed_paths"]) == 3 and len(done["diff"]) == 3
    assert not (tmp_path / "etc").exists()


def test_check_mode_counts_the_account_this_apply_creates_as_a_change(run_module, tmp_path):
    run_module(node_apply.main, spec(tmp_path))
    args = spec(tmp_path)
    args["files"][1]["group"] = "no-such-group-here"
    account = {"user": "no-such-user-here", "group": "no-such-group-here", "home": "/nowhere", "comment": "x"}
    done = run_module(node_apply.main, dict(args, account=account, _ansible_check_mode=True)).result
    assert done["paths"][args["files"][1]["path"]] == ["group"]
    assert done["account"][0] == ["groupadd", "--system", "no-such-group-here"]
    # Any other group the node lacks is refused, in --check as in a real run.
    for check_mode in (True, False):
        failed = run_module(node_apply.main, dict(args, _ansible_check_mode=check_mode))
        assert failed.failed and failed.result["msg"] == "%s: group no-such-group-here does not exist on this node" % (
            args["files"][1]["path"])


def test_a_link_in_the_file_s_place_is_replaced(run_module, tmp_path):
    run_module(node_apply.main, spec(tmp_path))
    unit = tmp_path / "etc" / "node.env"
    unit.unlink()
    unit.symlink_to("/dev/null")  # a masked unit
    done = run_module(node_apply.main, spec(tmp_path)).result
    assert done["paths"][str(unit)] == ["created"]
    assert not unit.is_symlink() and unit.read_text() == "A=1\n"


def test_refusals_name_the_path(run_module, tmp_path):
    args = spec(tmp_path)
    args["files"][0]["path"] = str(tmp_path)
    assert run_module(node_apply.main, args).result["msg"] == "%s is not a regular file" % tmp_path
    assert not (tmp_path / "etc").exists()  # the directory before it was not created either
    args = spec(tmp_path)
    args["files"][0]["mode"] = "rw"
    assert "node.env: mode 'rw' is not an octal number" in run_module(node_apply.main, args).result["msg"]
    args = spec(tmp_path)
    args["directories"] = []
    failed = run_module(node_apply.main, args)
    assert failed.failed and failed.result["msg"].endswith("directory %s does not exist" % (tmp_path / "etc"))
    assert not (tmp_path / "etc").exists()
    args = spec(tmp_path)
    args["files"].append(dict(args["files"][0]))
    assert run_module(node_apply.main, args).result["msg"] == "%s is given twice" % args["files"][0]["path"]


def test_new_content_is_validated_before_anything_is_written(run_module, tmp_path):
    # The second file fails: neither the directory nor the first file is written.
    args = spec(tmp_path)
    args["files"][1]["validate"] = "grep -q '^TOKEN=ok$' %s"
    failed = run_module(node_apply.main, args)
    assert failed.failed and failed.result["msg"] == (
        "%s: the new content fails \"grep -q '^TOKEN=ok$' %%s\" (exit 1): (output not shown: secret content)"
        % args["files"][1]["path"])
    assert not (tmp_path / "etc").exists()
    args = spec(tmp_path, secret="TOKEN=ok\n")
    args["files"][0]["validate"] = "grep -q '^A=1$' %s"
    assert not run_module(node_apply.main, args).failed
    args["files"][0]["content"] = "A=2\n"
    failed = run_module(node_apply.main, args)
    assert failed.failed and "fails \"grep -q '^A=1$' %s\" (exit 1)" in failed.result["msg"]
    assert (tmp_path / "etc" / "node.env").read_text() == "A=1\n"
    # Check mode validates nothing (the validator may come with this run).
    args = dict(args, _ansible_check_mode=True)
    args["files"][0]["validate"] = "false %s"
    assert run_module(node_apply.main, args).result["paths"][args["files"][0]["path"]] == ["content"]
    args["files"][0]["validate"] = "true"
    assert "validate must name the file to check with %s" in run_module(node_apply.main, args).result["msg"]


def test_paths_are_normalised_and_a_linked_directory_is_followed(run_module, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o750)
    os.chmod(str(real), 0o750)
    (tmp_path / "etc").symlink_to(real)
    args = spec(tmp_path)
    args["directories"][0]["path"] += "/"
    args["files"][0]["path"] = str(tmp_path / "etc") + "//node.env"
    done = run_module(node_apply.main, args).result
    assert done["paths"][str(tmp_path / "etc")] == [] and (real / "node.env").read_text() == "A=1\n"
    assert (tmp_path / "etc").is_symlink()


def test_an_unquoted_yaml_mode_is_the_number_it_means(run_module, tmp_path):
    args = spec(tmp_path)
    args["files"][0]["mode"] = 0o640  # YAML 1.1 reads 0640 as 416
    run_module(node_apply.main, args)
    assert mode_of(tmp_path / "etc" / "node.env") == 0o640


def test_a_mount_point_is_written_in_place_where_a_rename_cannot_replace_it(run_module, monkeypatch, tmp_path):
    """A container's bind-mounted /etc/hostname: rename(2) over it fails with EBUSY (as in podman nodes)."""
    import errno
    target = tmp_path / "hostname"
    target.write_text("old-name\n")
    inode = os.stat(str(target)).st_ino
    real_replace = os.replace

    def busy(source, destination):
        if str(destination) == str(target):
            raise OSError(errno.EBUSY, "Device or resource busy", str(destination))
        return real_replace(source, destination)

    monkeypatch.setattr(files.os, "replace", busy)
    wanted = {"path": str(target), "content": "node-1\n", "mode": "0644", "owner": ME, "group": MY_GROUP}
    refused = run_module(node_apply.main, {"files": [wanted]})
    assert refused.failed and "Device or resource busy" in refused.result["msg"]
    assert target.read_text() == "old-name\n"
    done = run_module(node_apply.main, {"files": [dict(wanted, mount_point=True)]})
    assert not done.failed and done.result["changed_paths"] == [str(target)]
    assert target.read_text() == "node-1\n" and os.stat(str(target)).st_ino == inode and mode_of(target) == 0o644
    assert os.listdir(str(tmp_path)) == ["hostname"]  # no temporary left
