#!/usr/bin/env python3
"""proctor and llama.cpp side by side on the same GGUF files, the same CPU and thread counts.

Writes a TinyLlama-1.1B-shaped model once (22 layers, hidden 2048, 32 heads / 4 KV heads, MLP
5632, Llama's SentencePiece vocabulary of 32000 from the fixtures' vocab-only GGUF; random bf16
weights, seed 7) with the `gguf` package, quantizes it with llama.cpp's own llama-quantize
(Q8_0, Q4_0, Q4_K_M, Q6_K), then for every type and thread count runs `proctor bench FILE` and
`llama-bench -m FILE` (prefill 512, decode 32), interleaved, `--reps` times each, and prints one
table: tok/s of each (the best repetition), the ratio proctor / llama.cpp, decode GB/s (the
file's weight bytes x decode tok/s), peak RSS, and the load average before the cell. proctor
runs once per `--compute` mode: f32 (exact activations) and q8 (8-bit activations before
products with GGUF block weights, as llama.cpp computes them; not run for bf16). MLX affine
types are proctor-only rows (llama.cpp cannot read them): `proctor bench --synthetic
tinyllama-1.1b --dtype affine4-g64`.

`--shape mixtral-8x2-1b` runs a mixture of experts instead: the shape of proctor's synthetic
preset of that name (Mixtral's block, 16 layers, hidden 1024, 16/4 heads, 8 experts of 2816 per
layer, 2 routed per token, vocab 32000), written as llama.cpp writes Mixtral (architecture
"llama" with expert_count, each layer's experts stacked in ffn_{gate,up,down}_exps, the router
ffn_gate_inp). Its decode GB/s counts what a token reads: the weights minus the experts plus the
routed experts' bytes (proctor's report, expert_bytes_read_per_decoded_token).
`--shape gemma-3-1b` and `--shape qwen3.5-0.8b` write proctor's presets of those names as
llama.cpp writes Gemma 3 (architecture gemma3: sandwich norms, q/k norms, the window and its
per-layer pattern, the local rope base) and Qwen3.5 (architecture qwen35: gated DeltaNet layers
as attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_conv1d, ssm_a, ssm_dt, ssm_norm, ssm_out, every
fourth layer gated full attention with q and its gate in attn_q, the ssm.* sizes, the M-RoPE
sections llama.cpp requires); both tie their heads. Their vocabularies (262144, 248320) are the
SPM vocabulary padded with unused tokens: the bench feeds token ids, so only the sizes matter.

llama.cpp comes from the llama-cpp-python sdist the oracle setup unpacked
(tools/oracle/setup.sh), built here for this CPU: GGML_NATIVE off (its native build dies with
SIGILL in the AMX path on these VMs), AVX2/FMA/F16C on, the AVX-512 options on where the CPU has
them, AMX off. Files and builds are cached under ~/.cache/proctor/bench.

usage: bench/vs_llama_cpp.py [--proctor build/proctor] [--types bf16,q8_0,q4_0,q4_k_m,q6_k]
                             [--mlx affine4-g64,affine8-g64] [--threads 1,2] [--reps 2]
                             [--compute f32,q8]
                             [--shape tinyllama-1.1b|mixtral-8x2-1b|gemma-3-1b|qwen3.5-0.8b]
                             [--json OUT]
Run with the oracle environment's python (it has numpy and gguf):
  ~/.cache/proctor/oracle-venv-*/bin/python bench/vs_llama_cpp.py
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "proctor")
BENCH_CACHE = os.path.join(CACHE, "bench")
LLAMA_TYPES = {"bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_k_m": "Q4_K_M",
               "q6_k": "Q6_K", "q5_k_m": "Q5_K_M", "q4_1": "Q4_1", "q5_0": "Q5_0",
               "q3_k_m": "Q3_K_M", "q2_k": "Q2_K"}
SHAPES = {
    "tinyllama-1.1b": dict(layers=22, hidden=2048, heads=32, kv_heads=4, ff=5632, vocab=32000,
                           ctx=2048, theta=10000.0, experts=0, experts_used=0),
    "mixtral-8x2-1b": dict(layers=16, hidden=1024, heads=16, kv_heads=4, ff=2816, vocab=32000,
                           ctx=32768, theta=1000000.0, experts=8, experts_used=2),
    # proctor's presets of these names (src/model/synthetic_model.cc), as llama.cpp writes them.
    "gemma-3-1b": dict(arch="gemma3", layers=26, hidden=1152, heads=4, kv_heads=1, head_dim=256,
                       ff=6912, vocab=262144, ctx=32768, theta=1000000.0, theta_local=10000.0,
                       window=512, global_every=6, eps=1e-6, experts=0, experts_used=0),
    "qwen3.5-0.8b": dict(arch="qwen35", layers=24, hidden=1024, heads=8, kv_heads=2, head_dim=256,
                         rotary_dim=64, ff=3584, vocab=248320, ctx=262144, theta=10000000.0,
                         full_every=4, linear_heads=16, linear_head_dim=128, conv=4, eps=1e-6,
                         experts=0, experts_used=0),
}


def fail(message):
    sys.exit("vs_llama_cpp: " + message)


def cpu_facts():
    name, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown CPU":
                name = value.strip()
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
    shown = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                         "avx512_bf16", "avx512vbmi", "amx_tile", "amx_bf16", "amx_int8")
             if f in flags]
    return name, flags, shown


def llama_cpp_build(flags):
    """Builds llama-bench and llama-quantize for this CPU; returns the bin directory."""
    roots = sorted(glob.glob(os.path.join(CACHE, "llama.cpp-*", "src", ".complete")))
    if not roots:
        fail("no llama.cpp source under %s/llama.cpp-*/src: run tools/oracle/setup.sh first" % CACHE)
    src = os.path.dirname(roots[-1])
    avx512 = "avx512f" in flags and "avx512bw" in flags and "avx512vl" in flags
    # llama.cpp's defaults otherwise (OpenMP threads, its CPU backend built in).
    options = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DLLAMA_USE_PREBUILT_UI=OFF", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON",
               "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON",
               "-DGGML_AVX512=%s" % ("ON" if avx512 else "OFF"),
               "-DGGML_AVX512_VBMI=%s" % ("ON" if avx512 and "avx512vbmi" in flags else "OFF"),
               "-DGGML_AVX512_VNNI=%s" % ("ON" if avx512 and "avx512_vnni" in flags else "OFF"),
               "-DGGML_AVX512_BF16=%s" % ("ON" if avx512 and "avx512_bf16" in flags else "OFF"),
               "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"]
    key = hashlib.sha256((src + " ".join(options)).encode()).hexdigest()[:12]
    build = os.path.join(os.path.dirname(src), "build-bench-" + key)
    binary = os.path.join(build, "bin", "llama-bench")
    if not os.path.exists(os.path.join(build, ".complete")):
        print("building llama.cpp's llama-bench and llama-quantize in %s" % build, file=sys.stderr)
        launcher = []
        if subprocess.run(["sh", "-c", "command -v ccache"], capture_output=True).returncode == 0:
            launcher = ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        log = open(os.path.join(os.path.dirname(src), "build-bench.log"), "w")
        for command in (["cmake", "-S", src, "-B", build, "-G", "Ninja"] + launcher + options,
                        ["cmake", "--build", build, "-j", str(os.cpu_count()), "--target",
                         "llama-bench", "llama-quantize"]):
            if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
                fail("building llama.cpp failed (see %s)" % log.name)
        open(os.path.join(build, ".complete"), "w").close()
    if not os.path.exists(binary):
        fail("no %s after the build" % binary)
    return os.path.join(build, "bin")


def write_model(path, shape):
    """The bf16 GGUF of `shape`: Llama's SPM vocabulary (padded with unused tokens to the shape's
    vocabulary), random N(0, 1/fan_in) weights."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter
    fixtures = os.environ.get("PROCTOR_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures"))
    vocab_file = os.path.join(fixtures, "llama.cpp-vocab", "ggml-vocab-llama-spm.gguf")
    if not os.path.exists(vocab_file):
        fail("no %s (set PROCTOR_FIXTURES)" % vocab_file)
    vocab = GGUFReader(vocab_file)

    def field(name):
        f = vocab.fields[name]
        if f.types and f.types[0].name == "ARRAY":
            return [bytes(f.parts[i]).decode() if f.types[-1].name == "STRING" else f.parts[i][0]
                    for i in f.data]
        return f.parts[f.data[0]][0]

    s = SHAPES[shape]
    arch = s.get("arch", "llama")
    head_dim = s.get("head_dim", s["hidden"] // s["heads"])
    w = GGUFWriter(path + ".part", arch)
    w.add_name("%s-shaped random" % shape)
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ff"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(s.get("eps", 1e-5))
    w.add_rope_freq_base(s["theta"])
    w.add_rope_dimension_count(s.get("rotary_dim", head_dim))
    if s["experts"]:
        w.add_expert_count(s["experts"])
        w.add_expert_used_count(s["experts_used"])
    if arch == "gemma3":
        w.add_sliding_window(s["window"])
        w.add_array(arch + ".attention.sliding_window_pattern",
                    [(i + 1) % s["global_every"] != 0 for i in range(s["layers"])])
        w.add_float32(arch + ".rope.freq_base_swa", s["theta_local"])
    if arch == "qwen35":
        pairs = s["rotary_dim"] // 2  # M-RoPE sections (text positions: plain RoPE)
        w.add_array(arch + ".rope.dimension_sections",
                    [pairs - 2 * (pairs // 3), pairs // 3, pairs // 3, 0])
        w.add_ssm_conv_kernel(s["conv"])
        w.add_ssm_state_size(s["linear_head_dim"])
        w.add_ssm_group_count(s["linear_heads"])
        w.add_ssm_time_step_rank(s["linear_heads"])
        w.add_ssm_inner_size(s["linear_heads"] * s["linear_head_dim"])
        w.add_array(arch + ".attention.recurrent_layers",
                    [(i + 1) % s["full_every"] != 0 for i in range(s["layers"])])
        w.add_uint32(arch + ".full_attention_interval", s["full_every"])
    w.add_file_type(32)  # LLAMA_FTYPE_MOSTLY_BF16
    tokens = field("tokenizer.ggml.tokens")
    scores = [float(x) for x in field("tokenizer.ggml.scores")]
    token_types = [int(x) for x in field("tokenizer.ggml.token_type")]
    unused = range(len(tokens), s["vocab"])
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens + ["<unused%d>" % i for i in unused])
    w.add_token_scores(scores + [0.0] * len(unused))
    w.add_token_types(token_types + [5] * len(unused))  # llama.cpp's LLAMA_TOKEN_TYPE_UNUSED
    w.add_bos_token_id(int(field("tokenizer.ggml.bos_token_id")))
    w.add_eos_token_id(int(field("tokenizer.ggml.eos_token_id")))
    rng = np.random.default_rng(7)

    def bf16(shape, fan_in):
        a = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))
        bits = a.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)

    def add(name, array):
        w.add_tensor(name, array, raw_dtype=GGMLQuantizationType.BF16 if array.dtype == np.uint16
                     else None)

    hidden, kv = s["hidden"], s["kv_heads"] * head_dim
    q_rows = s["heads"] * head_dim * (2 if arch == "qwen35" else 1)  # qwen35: q and its gate
    add("token_embd.weight", bf16((s["vocab"], hidden), 1))
    for i in range(s["layers"]):
        p = "blk.%d." % i
        add(p + "attn_norm.weight", np.ones(hidden, np.float32))
        if arch == "qwen35" and (i + 1) % s["full_every"] != 0:  # a gated DeltaNet layer
            nh, d = s["linear_heads"], s["linear_head_dim"]
            add(p + "attn_qkv.weight", bf16((3 * nh * d, hidden), hidden))
            add(p + "attn_gate.weight", bf16((nh * d, hidden), hidden))
            add(p + "ssm_beta.weight", bf16((nh, hidden), hidden))
            add(p + "ssm_alpha.weight", bf16((nh, hidden), hidden))
            add(p + "ssm_conv1d.weight", rng.standard_normal((3 * nh * d, s["conv"]),
                                                             dtype=np.float32) * 0.5)
            add(p + "ssm_a", -rng.uniform(1.0, 16.0, nh).astype(np.float32))
            add(p + "ssm_dt.bias", np.ones(nh, np.float32))
            add(p + "ssm_norm.weight", np.ones(d, np.float32))
            add(p + "ssm_out.weight", bf16((hidden, nh * d), nh * d))
        else:
            add(p + "attn_q.weight", bf16((q_rows, hidden), hidden))
            add(p + "attn_k.weight", bf16((kv, hidden), hidden))
            add(p + "attn_v.weight", bf16((kv, hidden), hidden))
            add(p + "attn_output.weight", bf16((hidden, s["heads"] * head_dim),
                                               s["heads"] * head_dim))
            if arch in ("gemma3", "qwen35"):
                add(p + "attn_q_norm.weight", np.ones(head_dim, np.float32))
                add(p + "attn_k_norm.weight", np.ones(head_dim, np.float32))
        if arch == "gemma3":  # the sandwich norms around attention and the MLP
            add(p + "post_attention_norm.weight", np.ones(hidden, np.float32))
            add(p + "post_ffw_norm.weight", np.ones(hidden, np.float32))
        add(p + ("post_attention_norm.weight" if arch == "qwen35" else "ffn_norm.weight"),
            np.ones(hidden, np.float32))
        if s["experts"]:  # [experts, out, in]: ggml dims [in, out, experts]
            e = s["experts"]
            add(p + "ffn_gate_inp.weight", bf16((e, hidden), hidden))
            add(p + "ffn_gate_exps.weight", bf16((e, s["ff"], hidden), hidden))
            add(p + "ffn_up_exps.weight", bf16((e, s["ff"], hidden), hidden))
            add(p + "ffn_down_exps.weight", bf16((e, hidden, s["ff"]), s["ff"]))
            continue
        add(p + "ffn_gate.weight", bf16((s["ff"], hidden), hidden))
        add(p + "ffn_up.weight", bf16((s["ff"], hidden), hidden))
        add(p + "ffn_down.weight", bf16((hidden, s["ff"]), s["ff"]))
    add("output_norm.weight", np.ones(hidden, np.float32))
    if arch == "llama":  # the Gemma and Qwen3.5 presets tie their heads
        add("output.weight", bf16((s["vocab"], hidden), hidden))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(path + ".part", path)


def model_files(types, bin_dir, shape):
    os.makedirs(BENCH_CACHE, exist_ok=True)
    stem = "tinyllama-shaped" if shape == "tinyllama-1.1b" else shape + "-shaped"
    base = os.path.join(BENCH_CACHE, "%s-bf16.gguf" % stem)
    if not os.path.exists(base):
        print("writing %s" % base, file=sys.stderr)
        # In a child process: this one stays small, so the peak RSS its children report (which
        # starts from the forking process's) is their own.
        if subprocess.run([sys.executable, os.path.abspath(__file__), "--write-model",
                           base, "--shape", shape]).returncode != 0:
            fail("writing %s failed" % base)
    files = {}
    for t in types:
        if t == "bf16":
            files[t] = base
            continue
        out = os.path.join(BENCH_CACHE, "%s-%s.gguf" % (stem, t))
        if not os.path.exists(out):
            print("llama-quantize %s -> %s" % (LLAMA_TYPES[t], out), file=sys.stderr)
            r = subprocess.run([os.path.join(bin_dir, "llama-quantize"), base, out + ".part",
                                LLAMA_TYPES[t]], capture_output=True, text=True)
            if r.returncode != 0:
                fail("llama-quantize %s failed:\n%s" % (t, r.stderr[-2000:]))
            os.replace(out + ".part", out)
        files[t] = out
    return files


def timed(command):
    """(stdout, peak RSS in MB, seconds) of one process."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as err_file:
        p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err_file, text=True)
        # wait4 gives this child's own peak RSS (ru_maxrss, KiB); read its output first.
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        err_file.seek(0)
        err = err_file.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        fail("%s failed (%d):\n%s" % (" ".join(command), p.returncode, err[-2000:]))
    return out, usage.ru_maxrss / 1024.0, time.monotonic() - start


def proctor_cell(proctor, model, threads, compute, shape, synthetic=None):
    command = [proctor, "-q", "-t", str(threads), "bench", "--prompt-tokens", "512",
               "--decode-tokens", "32", "--compute", compute]
    command += ["--synthetic", shape, "--dtype", synthetic] if synthetic else [model]
    out, rss, _ = timed(command)
    j = json.loads(out)
    # What one decoded token reads: every weight, or for a mixture of experts the weights minus
    # the experts plus the routed experts' bytes.
    read = j["weight_bytes"]
    if j.get("moe"):
        read += j["moe"]["expert_bytes_read_per_decoded_token"] - j["moe"]["expert_bytes"]
    return {"prefill": j["prefill_tokens_per_second"], "decode": j["decode_tokens_per_second"],
            "rss_mb": rss, "weight_bytes": j["weight_bytes"], "bytes_per_token": read,
            "kernels": j.get("decode_kernels")}


def llama_cell(bin_dir, model, threads):
    out, rss, _ = timed([os.path.join(bin_dir, "llama-bench"), "-m", model, "-t", str(threads),
                         "-p", "512", "-n", "32", "-r", "1", "-o", "json"])
    rows = json.loads(out)
    prefill = next(r["avg_ts"] for r in rows if r["n_prompt"] == 512 and r["n_gen"] == 0)
    decode = next(r["avg_ts"] for r in rows if r["n_gen"] == 32 and r["n_prompt"] == 0)
    return {"prefill": prefill, "decode": decode, "rss_mb": rss}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--proctor", default=os.path.join(ROOT, "build", "proctor"))
    ap.add_argument("--types", default="bf16,q8_0,q4_0,q4_k_m,q6_k")
    ap.add_argument("--mlx", default="affine4-g64,affine8-g64")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--compute", default="f32,q8",
                    help="proctor's --compute modes to run (f32, bf16, q8)")
    ap.add_argument("--shape", default="tinyllama-1.1b", choices=sorted(SHAPES),
                    help="the model shape (default tinyllama-1.1b; mixtral-8x2-1b: a mixture of "
                    "experts; gemma-3-1b; qwen3.5-0.8b: a hybrid)")
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--write-model", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_model:
        write_model(args.write_model, args.shape)
        return
    types = [t for t in args.types.split(",") if t]
    for t in types:
        if t not in LLAMA_TYPES:
            fail("unknown type %r (known: %s)" % (t, ", ".join(LLAMA_TYPES)))
    threads = [int(t) for t in args.threads.split(",") if t]
    modes = [m for m in args.compute.split(",") if m]
    if not modes or any(m not in ("f32", "bf16", "q8") for m in modes):
        fail("--compute %r: expected a list of f32, bf16, q8" % args.compute)
    if not os.access(args.proctor, os.X_OK):
        fail("no proctor binary at %s (build it: bash scripts/build.sh)" % args.proctor)
    if args.reps < 1 or not threads or min(threads) < 1:
        fail("--reps and --threads must be positive")
    cpu, flags, shown = cpu_facts()
    bin_dir = llama_cpp_build(flags)
    files = model_files(types, bin_dir, args.shape)

    cells = []

    def measure():
        for t in types:
            # q8 changes nothing for bf16 weights (it quantizes activations for block weights only).
            type_modes = [m for m in modes if not (t == "bf16" and m == "q8")]
            for n in threads:
                load = os.getloadavg()[0]
                p_runs, l_runs = {m: [] for m in type_modes}, []
                for _ in range(args.reps):  # interleaved
                    l_runs.append(llama_cell(bin_dir, files[t], n))
                    for m in type_modes:
                        p_runs[m].append(proctor_cell(args.proctor, files[t], n, m, args.shape))
                for m in type_modes:
                    cells.append({"type": t, "compute": m, "threads": n, "load": load,
                                  "proctor": p_runs[m], "llama_cpp": l_runs,
                                  "file_bytes": os.path.getsize(files[t])})
                print("  %s x%d done" % (t, n), file=sys.stderr)
        for m in [m for m in args.mlx.split(",") if m]:
            for n in threads:
                load = os.getloadavg()[0]
                p_runs = [proctor_cell(args.proctor, None, n, "f32", args.shape, synthetic=m)
                          for _ in range(args.reps)]
                cells.append({"type": m, "compute": "f32", "threads": n, "load": load,
                              "proctor": p_runs, "llama_cpp": None,
                              "file_bytes": p_runs[0]["weight_bytes"]})

    # A failed cell ends the run, but what was measured before it is still printed (and saved).
    try:
        measure()
        failure = None
    except SystemExit as e:
        failure = e
    print("CPU: %s (%s), %d hardware threads" % (cpu, " ".join(shown), os.cpu_count()))
    print("%s-shaped GGUF (random weights), prefill 512, decode 32; best of %d "
          "interleaved runs; tok/s" % (args.shape, args.reps))
    print("%-14s %-4s %3s  %9s %9s %6s  %8s %8s %6s  %7s  %9s %9s  %5s" % (
        "weights", "act", "thr", "pp llama", "pp proc", "ratio", "tg llama", "tg proc", "ratio",
        "tg GB/s", "RSS llama", "RSS proc", "load"))
    for c in cells:
        p_pp = max(r["prefill"] for r in c["proctor"])
        p_tg = max(r["decode"] for r in c["proctor"])
        p_rss = max(r["rss_mb"] for r in c["proctor"])
        gbs = c["proctor"][0]["bytes_per_token"] * p_tg / 1e9
        if c["llama_cpp"]:
            l_pp = max(r["prefill"] for r in c["llama_cpp"])
            l_tg = max(r["decode"] for r in c["llama_cpp"])
            l_rss = max(r["rss_mb"] for r in c["llama_cpp"])
            print("%-14s %-4s %3d  %9.1f %9.1f %5.2fx  %8.2f %8.2f %5.2fx  %7.1f  %8.0fM %8.0fM  "
                  "%5.2f" % (c["type"], c["compute"], c["threads"], l_pp, p_pp, p_pp / l_pp, l_tg, p_tg, p_tg / l_tg, gbs,
                l_rss, p_rss, c["load"]))
        else:
            print("%-14s %-4s %3d  %9s %9.1f %6s  %8s %8.2f %6s  %7.1f  %9s %8.0fM  %5.2f" % (
                c["type"], c["compute"], c["threads"], "-", p_pp, "", "-", p_tg, "", gbs, "-", p_rss, c["load"]))
    print("act = proctor's --compute (f32: exact activations; q8: 8-bit activations as llama.cpp); "
          "ratio = proctor / llama.cpp; tg GB/s = weight bytes a token reads x proctor decode tok/s; "
          "RSS = peak "
          "resident set of the process; load = 1-minute load average before the cell.")
    kernels = {"%s %s" % (c["type"], c["compute"]): c["proctor"][0]["kernels"] for c in cells}
    print("proctor decode kernels: %s" % json.dumps(kernels))
    if args.json:
        with open(args.json + ".part", "w") as f:
            json.dump({"cpu": cpu, "flags": shown, "cells": cells}, f, indent=1)
        os.replace(args.json + ".part", args.json)
    if failure is not None:
        raise failure


if __name__ == "__main__":
    main()
