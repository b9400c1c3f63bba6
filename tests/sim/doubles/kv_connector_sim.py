"""The KV connector of the `vllm serve` double (never shipped): what vllm-ascend 0.23.0's MooncakeConnectorV1 does
that the collection relies on, read from its source (the vllm-ascend 0.23.0.post1 sdist on PyPI):

- --kv-transfer-config is vLLM's KVTransferConfig: unknown keys refused from 0.23 (vllm/config/utils.py,
  ConfigDict(extra="forbid")), kv_role one of vLLM's, a connector needs a role (vllm/config/kv_transfer.py);
- the pool's own entry of kv_connector_extra_config must equal its own TP and DP (vllm_ascend/utils.py,
  check_kv_extra_config), prefill TP >= decode TP (kv_p2p/mooncake_connector.py);
- engine_id gets a uuid appended at start-up (vllm_ascend/platform.py), so a pool's id is only known to those it
  tells: the producer returns it in kv_transfer_params;
- the producer (prefill) listens on kv_port + its ranks' offsets (kv_port + dp_rank x tp x pp + the worker's rank)
  at VLLM_HOST_IP; a request sent with kv_transfer_params.do_remote_decode finishes after one token and answers
  kv_transfer_params in the field names of mooncake_connector.py's request_finished;
- the consumer (decode) pulls the blocks from remote_host:remote_port before it decodes; it needs
  do_remote_prefill, remote_block_ids, remote_engine_id, remote_host, remote_port and remote_request_id.

vllm-ascend 0.9.1 and 0.11's LLMDataDistCMgrConnector (vllm_ascend/distributed/llmdatadist_c_mgr_connector.py):

- it reads the rank table DISAGGREGATED_PREFILL_RANK_TABLE_PATH names and takes, per TP rank, the entries of its
  role's list whose server_id is get_ip() (VLLM_HOST_IP) and whose device_id is in ASCEND_RT_VISIBLE_DEVICES, else
  fails ("Can't read the target server_id ... from rank table");
- each worker listens on the RPC base (VLLM_LLMDD_RPC_PORT in 0.9.1, VLLM_ASCEND_LLMDD_RPC_PORT in 0.11, default
  5557) + DP rank x TP + TP rank; the prefill returns remote_engine_id, remote_host, remote_port (the base + DP rank
  x TP) and remote_tp_size, which the decode needs with remote_block_ids (update_state_after_alloc).

The pull is a JSON line over TCP standing for Mooncake's handshake and transfer (LLMDataDist's link and pull): the
decode says which engine it expects, its role and extra config; the prefill answers its own or refuses. A decode
that cannot reach the prefill fails the request naming the prefill's engine, host and port (kv_load_failure_policy
"fail", 0.23's default). Knob: ASCEND_SIM_KV_TIMEOUT (seconds a pull waits, default 30).
"""

import json
import os
import socket
import threading
import uuid

# KVTransferConfig's fields in vLLM 0.23.0 (tests/unit/.../fixtures/kv_transfer_config/vllm-0.23.0.json).
FIELDS = ("kv_connector", "engine_id", "kv_buffer_device", "kv_buffer_size", "kv_role", "kv_rank", "kv_parallel_size",
          "kv_ip", "kv_port", "kv_connector_extra_config", "kv_connector_module_path", "enable_permute_local_kv",
          "kv_load_failure_policy")
ROLES = ("kv_producer", "kv_both", "kv_consumer")
LLMDATADIST = "LLMDataDistCMgrConnector"
# What each release's vllm-ascend registers (vllm_ascend/distributed/__init__.py; 0.23: kv_transfer/__init__.py).
CONNECTORS = {
    (0, 9): ("AscendHcclConnector", "AscendSimpleConnector", LLMDATADIST),
    (0, 11): (LLMDATADIST, "MooncakeConnectorV1", "MooncakeConnectorStoreV1", "MooncakeLayerwiseConnector"),
    (0, 23): ("MooncakeConnectorV1", "MooncakeHybridConnector", "MooncakeConnectorStoreV1", "AscendStoreConnector",
              "MooncakeLayerwiseConnector"),
}
REQUIRED = {"mooncake": ("do_remote_prefill", "remote_block_ids", "remote_engine_id", "remote_host", "remote_port",
                         "remote_request_id"),
            "llmdatadist": ("do_remote_prefill", "remote_block_ids", "remote_engine_id", "remote_host", "remote_port",
                            "remote_tp_size")}
RPC_PORT_ENV = {(0, 9): "VLLM_LLMDD_RPC_PORT", (0, 11): "VLLM_ASCEND_LLMDD_RPC_PORT"}
BLOCK_SIZE = 128


class KVError(Exception):
    pass


class Connector(object):
    def __init__(self, text, tp, pp, dp, start_rank, local_ranks, die, log, release=(0, 23)):
        self.log = log
        try:
            config = json.loads(text)
        except ValueError as exc:
            die("--kv-transfer-config is not valid JSON: %s" % exc)
        unknown = sorted(set(config) - set(FIELDS))
        if unknown and release >= (0, 23):
            die("pydantic_core._pydantic_core.ValidationError: 1 validation error for KVTransferConfig\n%s\n  Extra "
                "inputs are not permitted [type=extra_forbidden]" % unknown[0])
        role = config.get("kv_role")
        if role is not None and role not in ROLES:
            die("ValueError: Unsupported kv_role: %s. Supported roles are %s" % (role, ROLES))
        if config.get("kv_connector") and role is None:
            die("ValueError: Please specify kv_role when kv_connector is set, supported roles are %s" % (ROLES,))
        line = max(key for key in CONNECTORS if key <= release)
        if config.get("kv_connector") not in CONNECTORS[line]:
            die("ValueError: Unsupported connector type %s" % config.get("kv_connector"))
        self.kind = "llmdatadist" if config["kv_connector"] == LLMDATADIST else "mooncake"
        self.role = role
        self.extra = config.get("kv_connector_extra_config") or {}
        self.host = os.environ.get("VLLM_HOST_IP") or socket.gethostbyname(socket.gethostname())
        if self.kind == "llmdatadist":
            self._rank_table(tp, die)
        own = self.extra.get("prefill" if role == "kv_producer" else "decode", {})
        for key, value, what in (("tp_size", tp, "tensor"), ("dp_size", dp, "data")):
            if key in own and own[key] != value:
                die("ValueError: KV transfer '%s' config has a conflicting %s parallel size. Expected %d, but got %s."
                    % ("prefill" if role == "kv_producer" else "decode", what, value, own[key]))
        prefill_tp = self.extra.get("prefill", {"tp_size": 1})["tp_size"]
        decode_tp = self.extra.get("decode", {"tp_size": 1})["tp_size"]
        if prefill_tp < decode_tp:
            die("ValueError: prefill_tp_size: %s must be greater than or equal to the decode_tp_size: %s"
                % (prefill_tp, decode_tp))
        # Only 0.23's platform.py appends the uuid.
        self.engine_id = "%s-%s" % (config.get("engine_id") or uuid.uuid4(), uuid.uuid4().hex) if (
            release >= (0, 23)) else str(config.get("engine_id") or uuid.uuid4())
        self.kv_port = int(config.get("kv_port", 14579))
        if self.kind == "llmdatadist":
            self.kv_port = int(os.environ.get(RPC_PORT_ENV[max(k for k in RPC_PORT_ENV if k <= release)], "5557"))
        self.tp = tp
        self.stride = tp * pp
        self.start_rank = start_rank
        self.local_ranks = local_ranks
        # Blocks held for the decode, by their IDs (unique while held, as the engine's KV cache blocks are).
        self.held = {}
        self.next_block = 0
        self.lock = threading.Lock()
        self.timeout = float(os.environ.get("ASCEND_SIM_KV_TIMEOUT", "30"))
        log("KV connector %s: %s, engine_id %s" % (config.get("kv_connector"), role, self.engine_id))

    def _rank_table(self, tp, die):
        path = os.environ.get("DISAGGREGATED_PREFILL_RANK_TABLE_PATH")
        if not path:
            die("AssertionError: Please set path of rank_table to env variable DISAGGREGATED_PREFILL_RANK_TABLE_PATH")
        try:
            with open(path) as handle:
                table = json.load(handle)
        except (OSError, ValueError) as exc:
            die("reading the rank table %s: %s" % (path, exc))
        visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "")
        listed = table["prefill_device_list" if self.role == "kv_producer" else "decode_device_list"]
        mine = [d for d in listed if d.get("server_id") == self.host
                and (not visible or d.get("device_id", "") in visible.split(","))]
        if len(mine) < tp:
            die("AssertionError: Can't read the target server_id %s and device_rank %d from rank table"
                % (self.host, len(mine)))
        self.log("rank table %s: cluster ids %s" % (path, ",".join(d["cluster_id"] for d in mine[:tp])))

    # --- the producer --------------------------------------------------------------------------------

    def listen(self, die):
        """Every local worker's handshake port, bound before the engine serves (as the connector's threads are);
        LLMDataDist's workers listen on both sides."""
        if self.role != "kv_producer" and self.kind != "llmdatadist":
            return
        first = self.kv_port + self.start_rank * self.stride
        for port in range(first, first + self.local_ranks * self.stride):
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                server.bind((self.host, port))
            except OSError as exc:
                die("zmq.error.ZMQError: Address already in use (addr='tcp://%s:%d'): %s" % (self.host, port, exc))
            server.listen(16)
            threading.Thread(target=self._serve, args=(server,), daemon=True).start()
        self.log("KV handshake listening on %s:%d-%d" % (self.host, first, first + self.local_ranks * self.stride - 1))

    def _serve(self, server):
        while True:
            conn, _peer = server.accept()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.settimeout(self.timeout)
            try:
                ask = json.loads(conn.makefile().readline())
                if ask.get("engine_id") != self.engine_id:
                    answer = {"error": "unknown engine_id %s (this engine is %s)" % (ask.get("engine_id"),
                                                                                     self.engine_id)}
                elif ask.get("kv_role") != "kv_consumer":
                    answer = {"error": "kv_role mismatch: a %s asked a kv_producer" % ask.get("kv_role")}
                elif ask.get("extra_config") != self.extra:
                    answer = {"error": "kv_connector_extra_config differs: the decode has %s, this prefill %s"
                              % (json.dumps(ask.get("extra_config"), sort_keys=True),
                                 json.dumps(self.extra, sort_keys=True))}
                else:
                    with self.lock:
                        held = self.held.pop(tuple(ask.get("blocks") or ()), None)
                    answer = {"blocks": ask["blocks"], "request_id": held} if held is not None else {
                        "error": "no KV blocks held with IDs %s" % ask.get("blocks")}
                conn.sendall((json.dumps(answer) + "\n").encode())
            except (OSError, ValueError) as exc:
                self.log("KV handshake failed: %s" % exc)

    def prefilled(self, request_id, prompt_tokens, last_token_id):
        """kv_transfer_params of a request sent with do_remote_decode (it ends after one token)."""
        count = max(1, -(-prompt_tokens // BLOCK_SIZE))
        with self.lock:
            blocks = list(range(self.next_block, self.next_block + count))
            self.next_block += count
            self.held[tuple(blocks)] = request_id
        if self.kind == "llmdatadist":
            return {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": blocks,
                    "remote_engine_id": self.engine_id, "remote_host": self.host,
                    "remote_port": self.kv_port + self.start_rank * self.tp, "remote_tp_size": str(self.tp)}
        return {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": blocks,
                "remote_engine_id": self.engine_id, "remote_request_id": request_id, "remote_host": self.host,
                "remote_port": self.kv_port + self.start_rank * self.stride, "remote_pcp_size": 1,
                "remote_dcp_size": 1, "remote_ptp_size": self.tp, "last_token_id": last_token_id,
                "remote_multi_nodes_meta_mapping": {}, "num_prompt_blocks": count, "remote_block_size": BLOCK_SIZE}

    # --- the consumer --------------------------------------------------------------------------------

    def pull(self, params):
        """Fetch a prefilled request's blocks, or raise KVError naming the prefill. Without block IDs there is
        nothing to fetch: the decode prefills locally (mooncake_connector.py, update_state_after_alloc)."""
        if not params.get("remote_block_ids"):
            self.log("kv_transfer_params without remote_block_ids: prefilling locally")
            return
        missing = [key for key in REQUIRED[self.kind] if not params.get(key) and params.get(key) != 0]
        if missing:
            raise KVError("kv_transfer_params lack %s" % ", ".join(missing))
        where = "prefill engine %s at %s:%s" % (params["remote_engine_id"], params["remote_host"],
                                                params["remote_port"])
        ask = {"engine_id": params["remote_engine_id"], "blocks": params["remote_block_ids"],
               "kv_role": self.role, "extra_config": self.extra}
        try:
            with socket.create_connection((params["remote_host"], int(params["remote_port"])),
                                          timeout=self.timeout) as conn:
                conn.sendall((json.dumps(ask) + "\n").encode())
                answer = json.loads(conn.makefile().readline() or "{}")
        except socket.timeout:
            raise KVError("KV transfer from %s timed out after %.0f s" % (where, self.timeout))
        except (OSError, ValueError) as exc:
            raise KVError("KV transfer from %s failed: %s" % (where, exc))
        if "error" in answer or answer.get("blocks") != params["remote_block_ids"]:
            raise KVError("KV transfer from %s refused: %s" % (where, answer.get("error", "blocks differ")))
        self.log("pulled %d KV blocks of request %s from %s" % (len(answer["blocks"]), answer["request_id"], where))
