# -*- coding: utf-8 -*-
"""The support bundle: what it records, and no secret in it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import bundle


def test_secret_looking_names_are_redacted():
    text = ('VLLM_API_KEY="sim-secret"\nHF_TOKEN=hf_abc\nexport MY_DB_PASSWORD=\'p w\'\nRAY_AUTH_TOKEN=tok\n'
            'AWS_SECRET=x\nASCEND_RT_VISIBLE_DEVICES="0,1"\nKEYWORD=kept\n')
    assert bundle.redact(text) == (
        'VLLM_API_KEY=<redacted>\nHF_TOKEN=<redacted>\nexport MY_DB_PASSWORD=<redacted>\nRAY_AUTH_TOKEN=<redacted>\n'
        'AWS_SECRET=<redacted>\nASCEND_RT_VISIBLE_DEVICES="0,1"\nKEYWORD=kept\n')


def test_journal_lines_lose_keys_tokens_and_bearer_credentials():
    line = ("vllm serve /m --api-key sk-1 --hf-token=hf_2 --port 8000 started with RAY_AUTH_TOKEN=abc; "
            "Authorization: Bearer sk-1")
    redacted = bundle.redact(line)
    assert "sk-1" not in redacted and "hf_2" not in redacted and "abc" not in redacted
    assert "--port 8000" in redacted and redacted.count("<redacted>") == 4
    assert bundle.redact(None) is None


def test_keys_in_json_and_yaml():
    text = '{"api_key": "sk-1", "hf_token": "hf_2", "max_num_seqs": 8}\nserve:\n  HF_TOKEN: hf_3\n  token: t4\n'
    redacted = bundle.redact(text)
    assert all(secret not in redacted for secret in ("sk-1", "hf_2", "hf_3", "t4"))
    assert '"max_num_seqs": 8' in redacted


def test_secret_files_are_never_read():
    # The names the roles write: roles/serve (serve.env), roles/ray_cluster/tasks/auth.yml (ray-auth-token).
    assert not bundle.keep_file("/etc/ascend-inference/serve.env")
    assert not bundle.keep_file("/etc/ascend-inference/secrets.env")
    assert not bundle.keep_file("/etc/ascend-inference/ray-auth-token")
    assert not bundle.keep_file("/root/.ray/auth_token")
    assert bundle.keep_file("/etc/ascend-inference/node.env")


def test_every_command_the_checks_read():
    argvs = bundle.commands("npu-smi", "/opt/hccn_tool", [0, 9], ["ascend-serve.service"], 40)
    assert argvs[:4] == [["npu-smi", "info"], ["npu-smi", "info", "-l"], ["npu-smi", "info", "-m"],
                         ["npu-smi", "info", "-t", "phyid-remap", "-p", "0"]]
    hccn = [a for a in argvs if a[0] == "/opt/hccn_tool"]
    assert len(hccn) == 2 * len(bundle.HCCN_QUERIES)
    assert ["/opt/hccn_tool", "-i", "9", "-netdetect", "-g"] in hccn and ["/opt/hccn_tool", "-i", "9", "-tls", "-g"] in hccn
    assert ["journalctl", "--unit=ascend-serve.service", "--lines=40", "--no-pager", "--output=short-iso"] in argvs
    files = bundle.files("/usr/local/Ascend", ["/etc/x"])
    assert "/usr/local/Ascend/driver/version.info" in files and files[-1] == "/etc/x"
    assert "/usr/local/Ascend/cann-*/*/ascend_toolkit_install.info" in files
