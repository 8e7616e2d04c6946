// llama.cpp as a tokenizer oracle: loads a GGUF vocabulary (vocab only) and tokenizes every input
// the way llama.cpp's tools do for raw text with specials written in it: special tokens in the
// text are recognised (parse_special), no BOS/EOS is added. Built by tools/oracle/setup.sh against
// libllama from the llama-cpp-python sdist; used by the GGUF and corpus oracle tests.
//
//   llama_cpp_tokenize MODEL.gguf INPUTS OUT
//     INPUTS: records "<byte count>\n<bytes>" back to back (any bytes, newlines included)
//     OUT:    "bos <id>\neos <id>\n" (-1: none), then one line of space-separated ids per input
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.gguf INPUTS OUT\n", argv[0]);
    return 2;
  }
  llama_log_set(quiet_log, NULL);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  struct llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  const struct llama_vocab* vocab = llama_model_get_vocab(model);
  FILE* in = fopen(argv[2], "rb");
  FILE* out = fopen(argv[3], "wb");
  if (!in || !out) {
    fprintf(stderr, "cannot open %s or %s\n", argv[2], argv[3]);
    return 1;
  }
  fprintf(out, "bos %d\neos %d\n", llama_vocab_bos(vocab), llama_vocab_eos(vocab));
  long length;
  while (fscanf(in, "%ld", &length) == 1) {
    if (fgetc(in) != '\n' || length < 0) {
      fprintf(stderr, "malformed record header in %s\n", argv[2]);
      return 1;
    }
    char* text = malloc((size_t)length + 1);
    if (fread(text, 1, (size_t)length, in) != (size_t)length) {
      fprintf(stderr, "short record in %s\n", argv[2]);
      return 1;
    }
    const int capacity = (int)length + 16;
    llama_token* ids = malloc(sizeof(llama_token) * (size_t)capacity);
    const int n = llama_tokenize(vocab, text, (int)length, ids, capacity, false, true);
    if (n < 0) {
      fprintf(stderr, "llama_tokenize needs %d tokens, more than %d\n", -n, capacity);
      return 1;
    }
    for (int i = 0; i < n; ++i) fprintf(out, i ? " %d" : "%d", ids[i]);
    fputc('\n', out);
    free(ids);
    free(text);
  }
  fclose(in);
  if (fclose(out) != 0) return 1;
  llama_model_free(model);
  return 0;
}
