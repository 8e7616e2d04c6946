// llama.cpp as an oracle: prompt logits of a GGUF model through llama.cpp's own F32 path
// (F32 KV cache, flash attention off), written as raw little-endian f32 [T, vocab].
// Built by tools/oracle/setup.sh against libllama from the llama-cpp-python 0.3.36 sdist's
// llama.cpp source; used by src/model/llama_cpp_oracle_test.cc.
//
//   llama_cpp_logits BACKEND_DIR MODEL.gguf IDS(comma-separated) OUT.f32 [THREADS] [norepack]
// `norepack` keeps the weights in their file layout (use_extra_bufts off): the CPU backend then
// multiplies with each type's own vec_dot instead of its repacked interleaved kernels.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool silent_progress(float progress, void* user) {
  (void)progress;
  (void)user;
  return true;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s BACKEND_DIR MODEL.gguf IDS OUT.f32 [THREADS] [norepack]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 5 ? atoi(argv[5]) : 1;
  llama_token ids[4096];
  int n = 0;
  for (char* item = strtok(argv[3], ","); item && n < 4096; item = strtok(NULL, ",")) {
    ids[n++] = atoi(item);
  }
  llama_log_set(quiet_log, NULL);
  ggml_backend_load_all_from_path(argv[1]);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  if (argc > 6 && strcmp(argv[6], "norepack") == 0) mp.use_extra_bufts = false;
  mp.progress_callback = silent_progress;
  struct llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) {
    fprintf(stderr, "cannot load %s\n", argv[2]);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 4096;
  cp.n_batch = 4096;
  cp.n_ubatch = 4096;
  cp.n_seq_max = 1;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "cannot create a context\n");
    return 1;
  }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  struct llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) {
    fprintf(stderr, "llama_decode failed\n");
    return 1;
  }
  FILE* out = fopen(argv[4], "wb");
  if (!out) return 1;
  for (int i = 0; i < n; ++i) {
    fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)vocab, out);
  }
  fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
