"""plan/model_shape.py: the layout and the context length against a model's config.json, as vLLM reads it."""

from ansible_collections.ascend.inference.plugins.module_utils.plan import model_shape

# Qwen2.5-72B-Instruct's config.json (the keys that matter here, from the Hugging Face model card's file).
QWEN72B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
           "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 80,
           "max_position_embeddings": 32768, "rope_theta": 1000000.0, "sliding_window": 131072,
           "use_sliding_window": False, "rope_scaling": None, "torch_dtype": "bfloat16"}
# Qwen's documented way to serve 128K: YaRN over the 32K (vLLM 0.32 takes max_position_embeddings as already scaled
# for YaRN; earlier releases multiplied by the factor), so no limit can be told from the file.
YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "rope_type": "yarn"}


def test_the_models_context_is_the_limit():
    assert model_shape.context_limit(QWEN72B) == (32768, "max_position_embeddings")
    # The smallest of vLLM's keys wins; model_max_length overrides them all.
    assert model_shape.context_limit({"max_position_embeddings": 8192, "seq_length": 4096}) == (4096, "seq_length")
    assert model_shape.context_limit({"max_position_embeddings": 8192, "model_max_length": 16384}) == (
        16384, "model_max_length")
    assert model_shape.context_limit({"num_hidden_layers": 2}) is None


def test_rope_scaling_leaves_the_limit_unknown():
    assert model_shape.context_limit(dict(QWEN72B, rope_scaling=YARN)) is None
    assert model_shape.context_limit(dict(QWEN72B, rope_scaling={"type": "linear", "factor": 2.0})) is None
    # transformers 5 writes rope_parameters on every model: the default type scales nothing.
    assert model_shape.context_limit(dict(QWEN72B, rope_parameters={"rope_type": "default", "rope_theta": 1e6})) == (
        32768, "max_position_embeddings")
    # One set per layer type (Gemma 3's sliding and full attention).
    per_layer_type = {"full_attention": {"rope_type": "default"}}
    assert model_shape.context_limit(dict(QWEN72B, rope_parameters=per_layer_type)) is None


def test_a_longer_max_model_len_is_refused_unless_vllm_is_told_to_allow_it():
    found = model_shape.problems(QWEN72B, (8, 1, None), 65536, {})[0]
    assert found == ["ascend_serve_options.max_model_len 65536 is more than the model's 32768 "
                     "(max_position_embeddings in config.json): vLLM refuses to start; lower it, or set "
                     "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in ascend_extra_env if the model is known to hold it"]
    assert model_shape.problems(QWEN72B, (8, 1, None), 32768, {}) == ([], [])
    assert model_shape.problems(QWEN72B, (8, 1, None), 65536, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}) == ([], [])
    assert model_shape.problems(dict(QWEN72B, rope_scaling=YARN), (8, 1, None), 131072, {}) == ([], [])
    # Unset, vLLM takes the model's own.
    assert model_shape.problems(QWEN72B, (8, 1, None), None, {}) == ([], [])


def test_a_multimodal_models_text_config_is_read():
    config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "text_config": QWEN72B}
    found = model_shape.problems(config, (3, 1, None), 65536, {})[0]
    assert [problem.split(" ")[0] for problem in found] == ["ascend_tensor_parallel_size"] * 2 + [
        "ascend_serve_options.max_model_len"]
