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

The pull is a JSON line over TCP standing for Mooncake's handshake and transfer: the decode says which engine it
expects, its role and extra config; the prefill answers its own or refuses. A decode that cannot reach the prefill
fails the request naming the prefill's engine, host and port (kv_load_failure_policy "fail", 0.23's default).
Knob: ASCEND_SIM_KV_TIMEOUT (seconds a pull waits, default 30).
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
CONNECTORS = ("MooncakeConnectorV1", "MooncakeLayerwiseConnector", "MooncakeConnectorStoreV1")
REQUIRED = ("do_remote_prefill", "remote_block_ids", "remote_engine_id", "remote_host", "remote_port",
            "remote_request_id")
BLOCK_SIZE = 128


class KVError(Exception):
    pass


class Connector(object):
    def __init__(self, text, tp, pp, dp, start_rank, local_ranks, die, log):
        self.log = log
        try:
            config = json.loads(text)
        except ValueError as exc:
            die("--kv-transfer-config is not valid JSON: %s" % exc)
        unknown = sorted(set(config) - set(FIELDS))
        if unknown:
            die("pydantic_core._pydantic_core.ValidationError: 1 validation error for KVTransferConfig\n%s\n  Extra "
                "inputs are not permitted [type=extra_forbidden]" % unknown[0])
        role = config.get("kv_role")
        if role is not None and role not in ROLES:
            die("ValueError: Unsupported kv_role: %s. Supported roles are %s" % (role, ROLES))
        if config.get("kv_connector") and role is None:
            die("ValueError: Please specify kv_role when kv_connector is set, supported roles are %s" % (ROLES,))
        if config.get("kv_connector") not in CONNECTORS:
            die("ValueError: Unsupported connector type %s" % config.get("kv_connector"))
        self.role = role
        self.extra = config.get("kv_connector_extra_config") or {}
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
        self.engine_id = "%s-%s" % (config.get("engine_id") or uuid.uuid4(), uuid.uuid4().hex)
        self.kv_port = int(config.get("kv_port", 14579))
        self.host = os.environ.get("VLLM_HOST_IP") or socket.gethostbyname(socket.gethostname())
        self.stride = tp * pp
        self.start_rank = start_rank
        self.local_ranks = local_ranks
        self.blocks = {}
        self.lock = threading.Lock()
        self.timeout = float(os.environ.get("ASCEND_SIM_KV_TIMEOUT", "30"))
        log("KV connector %s: %s, engine_id %s" % (config.get("kv_connector"), role, self.engine_id))

    # --- the producer --------------------------------------------------------------------------------

    def listen(self, die):
        """Every local worker's handshake port, bound before the engine serves (as the connector's threads are)."""
        if self.role != "kv_producer":
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
                        blocks = self.blocks.pop(ask.get("request_id"), None)
                    answer = {"blocks": blocks} if blocks is not None else {
                        "error": "no KV blocks held for request %s" % ask.get("request_id")}
                conn.sendall((json.dumps(answer) + "\n").encode())
            except (OSError, ValueError) as exc:
                self.log("KV handshake failed: %s" % exc)

    def prefilled(self, request_id, prompt_tokens, last_token_id):
        """kv_transfer_params of a request sent with do_remote_decode (it ends after one token)."""
        count = max(1, -(-prompt_tokens // BLOCK_SIZE))
        blocks = list(range(count))
        with self.lock:
            self.blocks[request_id] = blocks
        return {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": blocks,
                "remote_engine_id": self.engine_id, "remote_request_id": request_id, "remote_host": self.host,
                "remote_port": self.kv_port + self.start_rank * self.stride, "remote_pcp_size": 1,
                "remote_dcp_size": 1, "remote_ptp_size": self.stride, "last_token_id": last_token_id,
                "remote_multi_nodes_meta_mapping": {}, "num_prompt_blocks": count, "remote_block_size": BLOCK_SIZE}

    # --- the consumer --------------------------------------------------------------------------------

    def pull(self, params):
        """Fetch a prefilled request's blocks, or raise KVError naming the prefill."""
        missing = [key for key in REQUIRED if not params.get(key) and params.get(key) != 0]
        if missing:
            raise KVError("kv_transfer_params lack %s" % ", ".join(missing))
        where = "prefill engine %s at %s:%s" % (params["remote_engine_id"], params["remote_host"],
                                                params["remote_port"])
        ask = {"engine_id": params["remote_engine_id"], "request_id": params["remote_request_id"],
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
        self.log("pulled %d KV blocks of request %s from %s"
                 % (len(answer["blocks"]), params["remote_request_id"], where))
