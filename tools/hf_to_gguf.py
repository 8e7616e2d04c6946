#!/usr/bin/python3
"""Writes a Hugging Face checkpoint (config.json + model.safetensors) of a Gemma 2, Gemma 3,
Qwen3-MoE, Mixtral, Phi-3, Qwen3.5 (text) or Qwen3-Next model as an F32 GGUF file in llama.cpp's
layout for that architecture,
with numpy and struct only (the GGUF framing of tools/write_model_files.py). What llama.cpp's own
converter does defines the file's meaning, and is reproduced:
  - names: token_embd, output_norm, output, blk.N.{attn_norm, attn_q, attn_k, attn_v,
    attn_output, attn_q_norm, attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down};
  - Gemma: every *norm.weight stored as 1 + weight (Gemma's RMSNorm multiplies by 1 + weight;
    llama.cpp's applies the stored weight); its sandwich norms post_attention_norm and
    post_ffw_norm, ffn_norm = HF pre_feedforward_layernorm; the output only for Gemma 3
    (llama.cpp's Gemma 2 always ties its head); metadata: the sliding window and its per-layer
    pattern (a bool array from layer_types), the soft-caps, Gemma 3's local rope base as
    rope.freq_base_swa and a linear global rope scaling as rope.scaling.*. GGUF has no
    query_pre_attn_scalar: llama.cpp scales attention by 1/sqrt(head_dim) (1/sqrt(hidden/heads)
    at the 27B layer counts), so a config with another value is refused;
  - Mixtral: architecture "llama" with expert_count / expert_used_count, Q/K rows permuted per
    head as the converter does for llama (RoPE on adjacent pairs); the router as ffn_gate_inp,
    the experts stacked per layer as ffn_gate_exps / ffn_up_exps / ffn_down_exps (ggml dims
    [in, out, experts]); no sliding window (llama.cpp's llama has none, so one is refused);
  - qwen3moe: the same experts with expert_feed_forward_length; llama.cpp's graph renormalises
    the top k and puts experts in every layer, so norm_topk_prob false, decoder_sparse_step > 1
    and mlp_only_layers are refused;
  - phi3: attn_qkv (q, k, v rows) and ffn_up (gate rows then up rows) kept fused,
    rope.dimension_count from partial_rotary_factor, attention.sliding_window (0 for none);
  - qwen35 (conversion/qwen.py, Qwen3_5TextModel): every norm but the DeltaNet's gated one
    (linear_attn.norm) stored as 1 + weight; A_log stored as ssm_a = -exp(A_log) (no suffix),
    dt_bias as ssm_dt.bias, conv1d squeezed to [channels, taps]; the DeltaNet's projections as
    attn_qkv, attn_gate (z), ssm_beta (b), ssm_alpha (a), ssm_out, ssm_norm, the MLP norm as
    post_attention_norm; value heads reordered from grouped by key head to tiled (V rows of
    attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_a, ssm_dt, the V channels of ssm_conv1d, the
    columns of ssm_out) when there are more value heads than key heads; metadata ssm.conv_kernel,
    ssm.state_size, ssm.group_count, ssm.time_step_rank, ssm.inner_size,
    attention.recurrent_layers, full_attention_interval, rope.dimension_count and the M-RoPE
    rope.dimension_sections llama.cpp requires (text positions make them plain RoPE);
  - qwen3next (conversion/qwen.py, Qwen3NextModel): qwen35's norms, ssm_a, ssm_dt and conv1d,
    but value heads left grouped by key head as HF stores them; in_proj_qkvz (per key-head group
    q, k, v, z) split into attn_qkv (every group's q, then k, then v) and attn_gate (z);
    in_proj_ba kept fused as ssm_ba; the experts stacked as for qwen3moe, the shared
    expert as ffn_{gate,up,down}_shexp and its gate as ffn_gate_inp_shexp; metadata as qwen35
    without dimension_sections, plus expert_shared_feed_forward_length.
The vocabulary is llama.cpp's "none" model with <arch>.vocab_size (these are test models
without a tokenizer).

usage: hf_to_gguf.py MODEL_DIR OUT.gguf
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_model_files import write_gguf  # noqa: E402

ARCHES = {"gemma2": "gemma2", "gemma3_text": "gemma3", "qwen3_moe": "qwen3moe", "mixtral": "llama",
          "phi3": "phi3", "qwen3_5_text": "qwen35", "qwen3_next": "qwen3next"}
LAYERS_27B = {"gemma2": 46, "gemma3": 62}
GEMMA_NAMES = {
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
LLAMA_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.qkv_proj": "attn_qkv",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.gate_up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "mlp.gate": "ffn_gate_inp",
    "block_sparse_moe.gate": "ffn_gate_inp",
}
HYBRID_NAMES = dict(LLAMA_NAMES)
HYBRID_NAMES.update({
    "post_attention_layernorm": "post_attention_norm",
    "linear_attn.in_proj_qkv": "attn_qkv",
    "linear_attn.in_proj_z": "attn_gate",
    "linear_attn.in_proj_b": "ssm_beta",
    "linear_attn.in_proj_a": "ssm_alpha",
    "linear_attn.conv1d": "ssm_conv1d",
    "linear_attn.norm": "ssm_norm",
    "linear_attn.out_proj": "ssm_out",
    "linear_attn.in_proj_ba": "ssm_ba",
    "mlp.shared_expert_gate": "ffn_gate_inp_shexp",
    "mlp.shared_expert.gate_proj": "ffn_gate_shexp",
    "mlp.shared_expert.up_proj": "ffn_up_shexp",
    "mlp.shared_expert.down_proj": "ffn_down_shexp",
})
# An expert's matrix name -> the stacked tensor it joins.
EXPERT_STACKS = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps",
                 "down_proj": "ffn_down_exps", "w1": "ffn_gate_exps", "w3": "ffn_up_exps",
                 "w2": "ffn_down_exps"}


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


def gguf_name(hf_name, block_names):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    parts = hf_name.split(".")
    if parts[:2] == ["model", "layers"] and parts[-1] in ("weight", "bias"):
        module = ".".join(parts[3:-1])
        if module in block_names:
            return "blk.%s.%s.%s" % (parts[2], block_names[module], parts[-1])
    fail("tensor %s has no place in llama.cpp's layout" % hf_name)


def expert_of(hf_name):
    """(layer, stacked tensor name, expert) of a routed expert's matrix, else None."""
    parts = hf_name.split(".")
    if (len(parts) == 8 and parts[:2] == ["model", "layers"] and parts[4] == "experts"
            and parts[7] == "weight" and parts[6] in EXPERT_STACKS):
        return int(parts[2]), EXPERT_STACKS[parts[6]], int(parts[5])
    return None


def permute_rows(w, heads):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows [2, d/2] -> [d/2, 2]."""
    rows = w.shape[0]
    return (w.reshape(heads, 2, rows // heads // 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape))


def rope_of(config, layer_type):
    params = config.get("rope_parameters") or {}
    if layer_type in params:
        return params[layer_type]
    if layer_type == "sliding_attention" and "rope_local_base_freq" in config:
        return {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
    if "rope_theta" in params:
        return params
    return {"rope_type": "default", "rope_theta": config.get("rope_theta", 10000.0)}


def gemma_metadata(config, arch, p, tied):
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    scalar = config.get("query_pre_attn_scalar", 256)
    llama_cpp_scalar = hidden // heads if layers == LAYERS_27B[arch] else head_dim
    if scalar != llama_cpp_scalar:
        fail("query_pre_attn_scalar %s: llama.cpp's %s scales attention by 1/sqrt(%d) and GGUF "
             "cannot say otherwise" % (scalar, arch, llama_cpp_scalar))
    if arch == "gemma2" and not tied:
        fail("an untied Gemma 2 head: llama.cpp's gemma2 always uses token_embd as its output")
    layer_types = config.get("layer_types")
    if layer_types is None or len(layer_types) != layers:
        fail("config.json needs layer_types for every one of its %d layers" % layers)
    meta = []
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
    return meta


def default_rope(config, p):
    """rope.freq_base of an unscaled rope; rope.dimension_count from partial_rotary_factor."""
    rope = rope_of(config, "full_attention")
    if rope.get("rope_type", "default") != "default":
        fail("rope_type %r is not written by this tool" % rope["rope_type"])
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    factor = rope.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    return [(p + "rope.freq_base", "float32", rope["rope_theta"]),
            (p + "rope.dimension_count", "uint32", int(factor * head_dim))]


def tiled_v_heads(w, axis, num_k_heads, head_dim):
    """Value heads grouped by key head [k0: v0..v(r-1), k1: ...] -> tiled [v0 of k0, k1, ...;
    v1 of k0, k1, ...] along `axis` (the converter's _reorder_v_heads)."""
    w = np.moveaxis(w, axis, 0)
    n = w.shape[0]
    r = n // num_k_heads // head_dim
    w = w.reshape(num_k_heads, r, head_dim, *w.shape[1:]).swapaxes(0, 1).reshape(n, *w.shape[1:])
    return np.moveaxis(w, 0, axis)


def hybrid_tensors(name, values, config, tiled):
    """[(GGUF name, values)] of a Qwen3.5 (tiled value heads) or Qwen3-Next tensor in llama.cpp's
    layout."""
    nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
    dk, dv = config["linear_key_head_dim"], config["linear_value_head_dim"]
    layer = name.split(".")[2] if name.startswith("model.layers.") else None
    if name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight"):
        values = values + np.float32(1.0)
    if name.endswith("in_proj_qkvz.weight"):
        groups = values.reshape(nk, 2 * dk + 2 * (nv // nk) * dv, -1)
        cuts = np.cumsum([dk, dk, (nv // nk) * dv])
        q, k, v, z = np.split(groups, cuts, axis=1)
        flat = [part.reshape(-1, values.shape[1]) for part in (q, k, v, z)]
        return [("blk.%s.attn_qkv.weight" % layer, np.concatenate(flat[:3])),
                ("blk.%s.attn_gate.weight" % layer, flat[3])]
    if ".linear_attn." in name and nk != nv and tiled:
        if name.endswith("in_proj_qkv.weight"):
            values = np.concatenate([values[:2 * nk * dk], tiled_v_heads(values[2 * nk * dk:], 0,
                                                                         nk, dv)])
        elif name.endswith("in_proj_z.weight"):
            values = tiled_v_heads(values, 0, nk, dv)
        elif name.endswith(("in_proj_b.weight", "in_proj_a.weight", "A_log", "dt_bias")):
            values = tiled_v_heads(values, 0, nk, 1)
        elif name.endswith("conv1d.weight"):
            values = np.concatenate([values[:2 * nk * dk], tiled_v_heads(values[2 * nk * dk:], 0,
                                                                         nk, dv)])
        elif name.endswith("out_proj.weight"):
            values = tiled_v_heads(values, 1, nk, dv)
    if name.endswith(".A_log"):
        return [("blk.%s.ssm_a" % layer, -np.exp(values))]
    if name.endswith(".dt_bias"):
        return [("blk.%s.ssm_dt.bias" % layer, values)]
    if name.endswith("conv1d.weight"):
        values = values.reshape(values.shape[0], values.shape[-1])
    return [(gguf_name(name, HYBRID_NAMES), values)]


def hybrid_metadata(config, p, mrope):
    layers = config["num_hidden_layers"]
    layer_types = config.get("layer_types")
    if layer_types is None:
        interval = config.get("full_attention_interval", 4)
        layer_types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                       for i in range(layers)]
    meta = default_rope(config, p)
    if mrope:
        pairs = meta[-1][2] // 2
        sections = (config.get("rope_parameters") or {}).get("mrope_section")
        if not sections or sum(sections) != pairs:
            sections = [pairs - 2 * (pairs // 3), pairs // 3, pairs // 3]
        meta.append((p + "rope.dimension_sections", ("array", "int32"), list(sections) + [0]))
    return meta + [
        (p + "ssm.conv_kernel", "uint32", config["linear_conv_kernel_dim"]),
        (p + "ssm.state_size", "uint32", config["linear_key_head_dim"]),
        (p + "ssm.group_count", "uint32", config["linear_num_key_heads"]),
        (p + "ssm.time_step_rank", "uint32", config["linear_num_value_heads"]),
        (p + "ssm.inner_size", "uint32",
         config["linear_value_head_dim"] * config["linear_num_value_heads"]),
        (p + "attention.recurrent_layers", ("array", "bool"),
         [t == "linear_attention" for t in layer_types]),
        (p + "full_attention_interval", "uint32", config.get("full_attention_interval", 4))]


def moe_metadata(config, arch, p):
    if arch == "llama":
        if config.get("sliding_window"):
            fail("sliding_window %s: llama.cpp's llama (Mixtral) attends to the whole context"
                 % config["sliding_window"])
        experts = config["num_local_experts"]
    else:
        if not config.get("norm_topk_prob", False):
            fail("norm_topk_prob false: llama.cpp's %s always renormalises the top k" % arch)
        if config.get("decoder_sparse_step", 1) != 1 or config.get("mlp_only_layers"):
            fail("decoder_sparse_step / mlp_only_layers: llama.cpp's %s has experts in every "
                 "layer" % arch)
        experts = config.get("num_experts") or config["num_local_experts"]
    meta = [(p + "expert_count", "uint32", experts),
            (p + "expert_used_count", "uint32", config["num_experts_per_tok"])]
    if arch in ("qwen3moe", "qwen3next"):
        meta.append((p + "expert_feed_forward_length", "uint32", config["moe_intermediate_size"]))
    if arch == "qwen3next":
        meta.append((p + "expert_shared_feed_forward_length", "uint32",
                     config["shared_expert_intermediate_size"]))
    return meta


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
    gemma = arch in LAYERS_27B
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    tied = "lm_head.weight" not in weights
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
            (p + "attention.head_count_kv", "uint32", kv_heads),
            (p + "attention.key_length", "uint32", head_dim),
            (p + "attention.value_length", "uint32", head_dim),
            (p + "attention.layer_norm_rms_epsilon", "float32", config["rms_norm_eps"]),
            ("tokenizer.ggml.model", "string", "none")]
    if gemma:
        meta += gemma_metadata(config, arch, p, tied)
    elif arch in ("qwen35", "qwen3next"):
        meta += hybrid_metadata(config, p, mrope=arch == "qwen35")
    else:
        meta += default_rope(config, p)
    if model_type in ("mixtral", "qwen3_moe", "qwen3_next"):
        meta += moe_metadata(config, arch, p)
    if arch == "phi3":
        meta.append((p + "attention.sliding_window", "uint32", config.get("sliding_window") or 0))

    block_names = GEMMA_NAMES if gemma else LLAMA_NAMES
    tensors = []
    stacks = {}  # (layer, stacked name) -> {expert: f32 matrix}
    for name in sorted(weights, key=lambda n: (n.count("layers"), n)):
        values = weights[name]
        expert = expert_of(name)
        if expert is not None:
            layer, stacked, e = expert
            stacks.setdefault((layer, stacked), {})[e] = values
            continue
        if arch in ("qwen35", "qwen3next"):
            for gguf, part in hybrid_tensors(name, values, config, tiled=arch == "qwen35"):
                tensors.append((gguf, "F32", list(reversed(part.shape)),
                                part.astype("<f4").tobytes()))
            continue
        if gemma and name.endswith("norm.weight"):
            values = values + np.float32(1.0)  # f32 arithmetic, as Gemma's (1.0 + weight.float())
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            values = permute_rows(values, heads if name.endswith("q_proj.weight") else kv_heads)
        tensors.append((gguf_name(name, block_names), "F32", list(reversed(values.shape)),
                        values.astype("<f4").tobytes()))
    for (layer, stacked), by_expert in sorted(stacks.items()):
        if sorted(by_expert) != list(range(len(by_expert))):
            fail("layer %d's experts %s are not 0..n-1" % (layer, sorted(by_expert)))
        values = np.stack([by_expert[e] for e in range(len(by_expert))])
        tensors.append(("blk.%d.%s.weight" % (layer, stacked), "F32", list(reversed(values.shape)),
                        values.astype("<f4").tobytes()))
    tmp = out_path + ".tmp"
    write_gguf(tmp, 3, 32, meta, tensors)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
