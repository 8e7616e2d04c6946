// Test oracle: llama.cpp's own model quantizer and ggml's reference dequantization, through the
// libllama / libggml-base built from the llama-cpp-python 0.3.36 sdist's llama.cpp source (by
// tools/oracle/setup.sh; never part of proctor itself).
//
//   llama_quantize_oracle IN.gguf OUT.gguf FTYPE DUMP_DIR
// runs llama_model_quantize(IN -> OUT, ftype = FTYPE, the llama_ftype number), then reads OUT
// with gguf.h and writes, for tensor i, DUMP_DIR/<i>.f32 = ggml's to_float of its bytes, plus
// DUMP_DIR/index.txt with one "name type_name n_values" line per tensor.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: llama_quantize_oracle IN.gguf OUT.gguf FTYPE DUMP_DIR\n");
    return 2;
  }
  const std::string dump = argv[4];
  llama_backend_init();
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.ftype = static_cast<llama_ftype>(std::atoi(argv[3]));
  params.nthread = 1;
  if (llama_model_quantize(argv[1], argv[2], &params) != 0) {
    std::fprintf(stderr, "llama_model_quantize failed\n");
    return 1;
  }
  gguf_init_params init = {true, nullptr};
  gguf_context* ctx = gguf_init_from_file(argv[2], init);
  if (ctx == nullptr) return 1;
  FILE* file = std::fopen(argv[2], "rb");
  FILE* index = std::fopen((dump + "/index.txt").c_str(), "w");
  if (file == nullptr || index == nullptr) return 1;
  for (int64_t i = 0; i < gguf_get_n_tensors(ctx); ++i) {
    const ggml_type type = gguf_get_tensor_type(ctx, i);
    const size_t bytes = gguf_get_tensor_size(ctx, i);
    std::vector<unsigned char> raw(bytes);
    std::fseek(file, static_cast<long>(gguf_get_data_offset(ctx) + gguf_get_tensor_offset(ctx, i)),
               SEEK_SET);
    if (std::fread(raw.data(), 1, bytes, file) != bytes) return 1;
    const int64_t n = static_cast<int64_t>(bytes / ggml_type_size(type)) * ggml_blck_size(type);
    std::vector<float> values(static_cast<size_t>(n));
    const ggml_type_traits* traits = ggml_get_type_traits(type);
    if (type == GGML_TYPE_F32) {
      std::copy(reinterpret_cast<const float*>(raw.data()),
                reinterpret_cast<const float*>(raw.data()) + n, values.begin());
    } else if (traits->to_float != nullptr) {
      traits->to_float(raw.data(), values.data(), n);
    } else {
      return 1;
    }
    FILE* out = std::fopen((dump + "/" + std::to_string(i) + ".f32").c_str(), "wb");
    if (out == nullptr || std::fwrite(values.data(), 4, values.size(), out) != values.size()) {
      return 1;
    }
    std::fclose(out);
    std::fprintf(index, "%s %s %lld\n", gguf_get_tensor_name(ctx, i), ggml_type_name(type),
                 static_cast<long long>(n));
  }
  std::fclose(index);
  std::fclose(file);
  gguf_free(ctx);
  llama_backend_free();
  return 0;
}
