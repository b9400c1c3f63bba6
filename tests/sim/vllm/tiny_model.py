"""Write a tiny Llama model that a real vLLM serves on the CPU: the same files, byte for byte, on every run.

Random weights from a fixed seed, float32 (bfloat16 kills vLLM's CPU worker on processors without it), 4 attention
heads of 64 (vLLM's CPU attention backend refuses a head size of 16; 32, 64, 80, ... are supported), 2 KV heads,
2 layers. The tokenizer is byte-level BPE with the 256 byte symbols and no merges, so any text encodes and every
token the model picks decodes. Standard library only: the controller that copies it needs nothing more.

Usage: tiny_model.py DIRECTORY
"""

import json
import os
import random
import struct
import sys

HIDDEN = 256
HEADS = 4
HEAD_DIM = 64
KV_HEADS = 2
LAYERS = 2
INTERMEDIATE = 512
SPECIAL = ["<s>", "</s>"]
VOCAB = 256 + len(SPECIAL)
CONTEXT = 2048
SEED = 59


def byte_symbols():
    """GPT-2's byte-to-character table, which byte-level BPE vocabularies are written in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(code) for code in codes)))


def tokenizer():
    symbols = byte_symbols()
    vocab = dict((symbols[byte], byte) for byte in range(256))
    for index, token in enumerate(SPECIAL):
        vocab[token] = 256 + index
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab[token], "content": token, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True} for token in SPECIAL],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": []},
    }


def tensors():
    """Each weight's name and shape, in Llama's naming (transformers' LlamaForCausalLM)."""
    shapes = [("model.embed_tokens.weight", (VOCAB, HIDDEN))]
    for layer in range(LAYERS):
        prefix = "model.layers.%d." % layer
        shapes += [
            (prefix + "input_layernorm.weight", (HIDDEN,)),
            (prefix + "self_attn.q_proj.weight", (HEADS * HEAD_DIM, HIDDEN)),
            (prefix + "self_attn.k_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN)),
            (prefix + "self_attn.v_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN)),
            (prefix + "self_attn.o_proj.weight", (HIDDEN, HEADS * HEAD_DIM)),
            (prefix + "post_attention_layernorm.weight", (HIDDEN,)),
            (prefix + "mlp.gate_proj.weight", (INTERMEDIATE, HIDDEN)),
            (prefix + "mlp.up_proj.weight", (INTERMEDIATE, HIDDEN)),
            (prefix + "mlp.down_proj.weight", (HIDDEN, INTERMEDIATE)),
        ]
    return shapes + [("model.norm.weight", (HIDDEN,)), ("lm_head.weight", (VOCAB, HIDDEN))]


def safetensors(path):
    """The safetensors format: an 8-byte little-endian header length, the JSON header, then the raw tensors."""
    rng = random.Random(SEED)
    header, blobs, offset = {}, [], 0
    for name, shape in tensors():
        count = 1
        for size in shape:
            count *= size
        if name.endswith("norm.weight"):
            values = [1.0] * count
        else:
            values = [rng.gauss(0.0, 0.02) for _index in range(count)]
        blob = struct.pack("<%df" % count, *values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        for blob in blobs:
            handle.write(blob)


def write_json(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")


def main(directory):
    os.makedirs(directory, exist_ok=True)
    write_json(os.path.join(directory, "config.json"), {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM, "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "max_position_embeddings": CONTEXT,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
        "torch_dtype": "float32", "bos_token_id": 256, "eos_token_id": 257})
    write_json(os.path.join(directory, "generation_config.json"), {"bos_token_id": 256, "eos_token_id": 257})
    write_json(os.path.join(directory, "tokenizer.json"), tokenizer())
    write_json(os.path.join(directory, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "model_max_length": CONTEXT, "clean_up_tokenization_spaces": False,
        # The chat endpoint needs a template: the messages, one per line.
        "chat_template": "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
                         "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"})
    safetensors(os.path.join(directory, "model.safetensors"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
