# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a model's config.json says about the layouts and the context lengths it allows, read as vLLM reads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# config.json keys that hold the number of routed experts, by model family.
EXPERT_COUNT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")

# The keys vLLM takes the model's longest context from, the smallest one present winning, unless model_max_length
# is set (vLLM 0.32 transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
# vLLM starts with a longer max_model_len than the model's only when this is set in its environment.
ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def text_config(model_config):
    """The language model's part of config.json: a multimodal model's text_config over its top level."""
    text = model_config.get("text_config")
    if isinstance(text, dict):
        return dict(text, **{k: v for k, v in model_config.items() if k not in text})
    return model_config


def context_limit(config):
    """(the longest max_model_len vLLM accepts without ALLOW_LONG, the key it comes from), or None where this cannot
    be told from config.json alone: RoPE scaling (vLLM multiplies by some factors and not others, and the set changed
    between releases: 0.32 leaves YaRN unscaled), or no key at all."""
    for key in ("rope_scaling", "rope_parameters"):
        scaling = config.get(key)
        if not isinstance(scaling, dict):
            continue
        if any(isinstance(value, dict) for value in scaling.values()):
            return None  # one set per layer type
        if scaling.get("rope_type", scaling.get("type", "default")) != "default" or \
                scaling.get("factor", 1) not in (1, 1.0, None):
            return None
    if _is_int(config.get("model_max_length")):
        return config["model_max_length"], "model_max_length"
    found = [(config[key], key) for key in CONTEXT_KEYS if _is_int(config.get(key))]
    return min(found, key=lambda item: item[0]) if found else None


def problems(model_config, sizes, max_model_len, env):
    """(problems, warnings) of a layout against the model. SIZES: tp, pp and ep (None without expert parallelism);
    MAX_MODEL_LEN: ascend_serve_options' (None: the model's own); ENV: the engine's environment variables."""
    found, warned = [], []
    if not isinstance(model_config, dict):
        return found, warned
    cfg = text_config(model_config)
    tp, pp, ep = sizes
    heads = cfg.get("num_attention_heads")
    if _is_int(heads) and heads % tp:
        found.append("ascend_tensor_parallel_size %d does not divide the model's %d attention heads "
                     "(num_attention_heads in config.json)" % (tp, heads))
    kv_heads = cfg.get("num_key_value_heads")
    if _is_int(kv_heads) and kv_heads > 0 and kv_heads % tp and tp % kv_heads:
        found.append("ascend_tensor_parallel_size %d and the model's %d KV heads (num_key_value_heads) "
                     "must divide one another" % (tp, kv_heads))
    layers = cfg.get("num_hidden_layers")
    if _is_int(layers) and pp > layers:
        found.append("ascend_pipeline_parallel_size %d is larger than the model's %d layers "
                     "(num_hidden_layers in config.json)" % (pp, layers))
    limit = context_limit(cfg)
    if _is_int(max_model_len) and limit and max_model_len > limit[0] and str((env or {}).get(ALLOW_LONG)) != "1":
        found.append("ascend_serve_options.max_model_len %d is more than the model's %d (%s in config.json): vLLM "
                     "refuses to start; lower it, or set %s=1 in ascend_extra_env if the model is known to hold it"
                     % (max_model_len, limit[0], limit[1], ALLOW_LONG))
    if ep is None:
        return found, warned
    experts = next((cfg[k] for k in EXPERT_COUNT_KEYS if _is_int(cfg.get(k))), None)
    if experts is None:
        found.append("ascend_enable_expert_parallel is true but config.json names no routed experts "
                     "(none of %s): the model is not a MoE model" % ", ".join(EXPERT_COUNT_KEYS))
    elif ep > experts:
        found.append("the expert-parallel size %d is larger than the model's %d routed experts" % (ep, experts))
    elif experts % ep:
        warned.append("the model's %d routed experts do not split evenly over EP %d; some NPUs hold "
                      "one expert more than others" % (experts, ep))
    return found, warned
