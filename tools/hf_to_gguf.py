#!/usr/bin/python3
"""Writes a Hugging Face Gemma checkpoint (config.json + model.safetensors) as an F32 GGUF file in
llama.cpp's layout for that architecture, with numpy and struct only (the GGUF framing of
tools/write_model_files.py). What llama.cpp's own converter does for Gemma is reproduced where it
defines the file's meaning:
  - every *norm.weight is stored as 1 + weight (Gemma's RMSNorm multiplies by 1 + weight;
    llama.cpp's applies the stored weight);
  - tensor names: token_embd, output_norm, output (Gemma 3 only: llama.cpp's Gemma 2 always
    ties its head), blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
    attn_k_norm, post_attention_norm, ffn_norm (HF pre_feedforward_layernorm), ffn_gate, ffn_up,
    ffn_down, post_ffw_norm};
  - metadata under "<arch>.": sizes, rms epsilon, rope.freq_base (the global rope), the sliding
    window and its per-layer pattern (a bool array from layer_types), the soft-caps; Gemma 3's
    local rope base as rope.freq_base_swa and a linear global rope scaling as rope.scaling.*.
The vocabulary is llama.cpp's "none" model with <arch>.vocab_size (these are test models
without a tokenizer). GGUF has no query_pre_attn_scalar: llama.cpp scales attention by
1/sqrt(head_dim) (1/sqrt(hidden/heads) at the 27B layer counts), so a config with another value
is refused rather than written with a different meaning.

usage: hf_to_gguf.py MODEL_DIR OUT.gguf
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_model_files import write_gguf  # noqa: E402

ARCHES = {"gemma2": "gemma2", "gemma3_text": "gemma3"}
LAYERS_27B = {"gemma2": 46, "gemma3": 62}
BLOCK_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "post_feedforward_layernorm": "post_ffw_norm",
}


def fail(message):
    sys.exit("hf_to_gguf: " + message)


def read_safetensors(path):
    """{name: f32 numpy array in the HF shape} from one safetensors file (F32, F16 or BF16)."""
    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    data = raw[8 + header_len:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        chunk = data[begin:end]
        if info["dtype"] == "F32":
            values = np.frombuffer(chunk, dtype="<f4")
        elif info["dtype"] == "F16":
            values = np.frombuffer(chunk, dtype="<f2").astype(np.float32)
        elif info["dtype"] == "BF16":
            values = (np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            fail("%s: tensor %s has dtype %s (F32, F16, BF16 expected)" % (path, name, info["dtype"]))
        out[name] = values.reshape(info["shape"]).astype(np.float32)
    return out


def gguf_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    parts = hf_name.split(".")
    if parts[:2] == ["model", "layers"] and parts[-1] in ("weight", "bias"):
        module = ".".join(parts[3:-1])
        if module in BLOCK_NAMES:
            return "blk.%s.%s.%s" % (parts[2], BLOCK_NAMES[module], parts[-1])
    fail("tensor %s has no place in llama.cpp's Gemma layout" % hf_name)


def rope_of(config, layer_type):
    params = config.get("rope_parameters") or {}
    if layer_type in params:
        return params[layer_type]
    if layer_type == "sliding_attention" and "rope_local_base_freq" in config:
        return {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
    if "rope_theta" in params:
        return params
    return {"rope_type": "default", "rope_theta": config.get("rope_theta", 10000.0)}


def main():
    if len(sys.argv) != 3:
        fail("usage: hf_to_gguf.py MODEL_DIR OUT.gguf")
    model_dir, out_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    model_type = config.get("model_type")
    if model_type not in ARCHES:
        fail("model_type %r is not one this writer knows (%s)" % (model_type, ", ".join(ARCHES)))
    arch = ARCHES[model_type]
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    scalar = config.get("query_pre_attn_scalar", 256)
    llama_cpp_scalar = hidden // heads if layers == LAYERS_27B[arch] else head_dim
    if scalar != llama_cpp_scalar:
        fail("query_pre_attn_scalar %s: llama.cpp's %s scales attention by 1/sqrt(%d) and GGUF "
             "cannot say otherwise" % (scalar, arch, llama_cpp_scalar))
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    tied = "lm_head.weight" not in weights
    if arch == "gemma2" and not tied:
        fail("an untied Gemma 2 head: llama.cpp's gemma2 always uses token_embd as its output")
    layer_types = config.get("layer_types")
    if layer_types is None or len(layer_types) != layers:
        fail("config.json needs layer_types for every one of its %d layers" % layers)
    vocab = config["vocab_size"]

    p = arch + "."
    meta = [("general.architecture", "string", arch),
            ("general.name", "string", os.path.basename(os.path.normpath(model_dir))),
            ("general.file_type", "uint32", 0),
            (p + "vocab_size", "uint32", vocab),
            (p + "context_length", "uint32", config["max_position_embeddings"]),
            (p + "embedding_length", "uint32", hidden),
            (p + "block_count", "uint32", layers),
            (p + "feed_forward_length", "uint32", config["intermediate_size"]),
            (p + "attention.head_count", "uint32", heads),
            (p + "attention.head_count_kv", "uint32", config.get("num_key_value_heads", heads)),
            (p + "attention.key_length", "uint32", head_dim),
            (p + "attention.value_length", "uint32", head_dim),
            (p + "attention.layer_norm_rms_epsilon", "float32", config["rms_norm_eps"]),
            ("tokenizer.ggml.model", "string", "none")]
    sliding = [t == "sliding_attention" for t in layer_types]
    if any(sliding):
        meta += [(p + "attention.sliding_window", "uint32", config["sliding_window"]),
                 (p + "attention.sliding_window_pattern", ("array", "bool"), sliding)]
    full_rope = rope_of(config, "full_attention")
    meta.append((p + "rope.freq_base", "float32", full_rope["rope_theta"]))
    if full_rope.get("rope_type", "default") == "linear":
        meta += [(p + "rope.scaling.type", "string", "linear"),
                 (p + "rope.scaling.factor", "float32", full_rope["factor"])]
    elif full_rope.get("rope_type", "default") != "default":
        fail("rope_type %r is not written by this tool" % full_rope["rope_type"])
    final_cap = config.get("final_logit_softcapping")
    if arch == "gemma2":
        attn_cap = config.get("attn_logit_softcapping")
        if not attn_cap:
            fail("llama.cpp's gemma2 always soft-caps attention: attn_logit_softcapping is needed")
        meta += [(p + "attn_logit_softcapping", "float32", attn_cap),
                 (p + "final_logit_softcapping", "float32", final_cap or 0.0)]
    else:
        local_rope = rope_of(config, "sliding_attention")
        if local_rope.get("rope_type", "default") != "default":
            fail("a scaled local rope cannot be written (llama.cpp scales only the global one)")
        meta.append((p + "rope.freq_base_swa", "float32", local_rope["rope_theta"]))
        if final_cap:
            meta.append((p + "final_logit_softcapping", "float32", final_cap))

    tensors = []
    for name in sorted(weights, key=lambda n: (n.count("layers"), n)):
        values = weights[name]
        if name.endswith("norm.weight"):
            values = values + np.float32(1.0)  # f32 arithmetic, as Gemma's (1.0 + weight.float())
        tensors.append((gguf_name(name), "F32", list(reversed(values.shape)),
                        values.astype("<f4").tobytes()))
    tmp = out_path + ".tmp"
    write_gguf(tmp, 3, 32, meta, tensors)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
