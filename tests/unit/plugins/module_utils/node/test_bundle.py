# -*- coding: utf-8 -*-
"""The support bundle: what it records, and no secret in it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import bundle


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


def hccn(device, query, stdout, rc=0):
    return {"argv": ["/usr/local/Ascend/driver/tools/hccn_tool", "-i", str(device), "-" + query, "-g"], "rc": rc,
            "stdout": stdout, "stderr": ""}


def test_npu_addresses_and_the_pings_the_network_check_sends(sample):
    """Each node's NPU addresses from its recorded hccn_tool answers (captured forms: hccn_tool-ip-g__910B1,
    hccn_tool-vnic-g__reconstructed_A3, and an address not set yet), then the pings from the first NPU: every other
    node's first NPU IP, and its first vNIC over HCCS where it has one (phase_npu_network.ping_targets)."""
    ip, vnic = sample("hccn_tool-ip-g__910B1_23.0.rc2__1.txt"), sample("hccn_tool-vnic-g__reconstructed_A3__1.txt")
    unset = sample("hccn_tool-ip-g__reconstructed_A2-A3_no-ip-preset__1.txt")
    b = bundle.npu_addresses([hccn(0, "ip", unset), hccn(1, "ip", ip), hccn(1, "vnic", vnic), hccn(2, "ip", "", 4),
                              {"argv": ["npu-smi", "info"], "rc": 0, "stdout": "ipaddr:1.2.3.4"}])
    assert b == {"1": {"ip": bundle.hccn.parse("ip", ip), "vnic": "192.0.2.199"}}
    a = bundle.npu_addresses([hccn(0, "ip", ip), hccn(0, "vnic", vnic)])
    assert bundle.ping_targets({"a": a, "b": b, "c": {}}, "a", 0) == [
        {"device": 0, "address": bundle.hccn.parse("ip", ip), "node": "b", "kind": "ping"},
        {"device": 0, "address": "192.0.2.199", "node": "b", "kind": "hccs_ping"}]
    assert bundle.ping_targets({"a": a}, "a", 0) == []
    # A node without vNIC addresses (not an Atlas A3) sends no HCCS ping, as the check does on other families.
    a2 = bundle.npu_addresses([hccn(0, "ip", ip)])
    assert [t["kind"] for t in bundle.ping_targets({"a": a2, "b": b}, "a", 0)] == ["ping"]


def test_units_name_their_instance_and_ports():
    text = ("[Service]\nExecStart=/opt/venv/bin/vllm serve /m --headless --data-parallel-rpc-port 29551 "
            "--port=8001\nExecStop=/bin/kill --port 9\n")
    assert bundle.unit_entry("ascend-serve-chat.service", text) == {
        "kind": "serve", "instance": "chat", "ports": {"data-parallel-rpc-port": 29551, "port": 8001}}
    assert bundle.unit_entry("ascend-serve.service", "")["instance"] is None
    # As the serve phase writes it (module_utils/runtime/systemd.command_line quotes every word).
    quoted = 'ExecStart="/v/bin/vllm" "serve" "/m" "--port" "8000" "--data-parallel-rpc-port=29550"\n'
    assert bundle.unit_entry("ascend-serve.service", quoted)["ports"] == {"port": 8000, "data-parallel-rpc-port": 29550}
    assert bundle.unit_entry("ascend-pd-ds.service", None)["kind"] == "pd"
    assert bundle.unit_entry("ascend-firewall.service", text) is None
    assert bundle.unit_entry("sshd.service", text) is None


def test_a_device_file_as_recorded():
    import stat
    entry = bundle.device_entry(stat.S_IFCHR | 0o660, bundle.os.makedev(236, 3), "HwHiAiUser", "HwHiAiUser")
    assert entry == {"type": "char", "mode": "0660", "owner": "HwHiAiUser", "group": "HwHiAiUser", "rdev": "236:3"}
    assert bundle.device_entry(stat.S_IFREG | 0o600, 0, "root", "root")["rdev"] is None
