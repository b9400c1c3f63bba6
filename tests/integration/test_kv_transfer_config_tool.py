"""tools/extract_kv_transfer_config.py, which writes the KVTransferConfig fixtures the planner's tests check the
pools' --kv-transfer-config against, on a small class written the ways vLLM's releases write theirs (Literal
aliases of aliases, Optional and X | None, field(default_factory=...), __post_init__'s raises) and on a wheel-shaped
zip, so that a change to the tool that misreads them fails here and not only when the fixtures are regenerated."""

import importlib.util
import json
import os
import zipfile

from conftest import REPO

SOURCE = '''
from dataclasses import field
from typing import Any, Literal, Optional

Produces = Literal["kv_producer", "kv_both"]
Consumes = Literal["kv_consumer", "kv_both"]
Role = Literal[Produces, Consumes]


@config
class KVTransferConfig:
    kv_connector: Optional[str] = None
    kv_role: Role | None = None
    kv_port: int = 14579
    kv_buffer_size: float = 1e9
    kv_connector_extra_config: dict[str, Any] = field(default_factory=dict)
    kv_buffer_device: str = field(default_factory=device_default)

    def __post_init__(self) -> None:
        if self.kv_connector is not None and self.kv_role is None:
            raise ValueError("Please specify kv_role when kv_connector is set")
'''


def tool():
    spec = importlib.util.spec_from_file_location("extract_kv", os.path.join(REPO, "tools",
                                                                             "extract_kv_transfer_config.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fields_defaults_roles_and_checks_are_read():
    found = tool().extract(SOURCE, True)
    assert found["fields"] == {
        "kv_connector": {"annotation": "Optional[str]", "value": None},
        "kv_role": {"annotation": "Role | None", "value": None},
        "kv_port": {"annotation": "int", "value": 14579},
        "kv_buffer_size": {"annotation": "float", "value": 1e9},
        "kv_connector_extra_config": {"annotation": "dict[str, Any]", "factory": "dict"},
        "kv_buffer_device": {"annotation": "str", "factory": "device_default"},
    }
    assert found["kv_role"] == ["kv_producer", "kv_both", "kv_consumer"]
    assert found["post_init_raises"] == ["ValueError('Please specify kv_role when kv_connector is set')"]


def test_a_wheel_is_read_with_its_name_hash_and_extra_policy(tmp_path, monkeypatch):
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/config/kv_transfer.py", SOURCE)
        archive.writestr("vllm/config/utils.py", 'merged_config = ConfigDict(extra="forbid")\n')
        archive.writestr("vllm-9.9.9.dist-info/METADATA", "Name: vllm\nVersion: 9.9.9\n")
    out = tmp_path / "out.json"
    monkeypatch.setattr("sys.argv", ["extract", "--wheel", str(wheel), "--out", str(out)])
    tool().main()
    written = json.loads(out.read_text())
    assert (written["vllm_version"], written["source"], written["forbids_extra"]) == (
        "9.9.9", "vllm/config/kv_transfer.py", True)
    assert written["wheel"] == wheel.name and len(written["wheel_sha256"]) == 64
