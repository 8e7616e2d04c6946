// Test oracle for src/quant: ggml's own quantizer and reference dequantizer, called through
// libggml-base built from the llama-cpp-python 0.3.36 sdist's llama.cpp source (by
// tools/oracle/setup.sh, against that source's ggml.h; never part of proctor itself).
//
//   ggml_oracle quantize TYPE ROWS N_PER_ROW IN.f32 OUT.q OUT.f32
//     quantizes ROWS x N_PER_ROW f32 values with ggml_quantize_chunk (no importance matrix) and
//     writes the blocks and ggml's dequantization of them (type_traits->to_float).
//   ggml_oracle dequantize TYPE N_VALUES IN.q OUT.f32
//     dequantizes raw blocks with ggml's to_float.
//   ggml_oracle activations q8_0|q8_K N_VALUES IN.f32 OUT.q
//     quantizes activations as ggml's CPU backend does before products with quantized weights:
//     its quantize_row_q8_0 / quantize_row_q8_K (libggml-cpu, this build's x86 versions), into a
//     zeroed buffer (ggml leaves an all-zero Q8_K block's bsums unwritten).
//   ggml_oracle rows TYPE ROWS N_PER_ROW IN.f32 OUT.q
//     quantizes each row with the CPU backend's from_float for TYPE (what llama.cpp's CPU
//     backend writes a quantized KV cache's rows with), one call per row.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

// The CPU backend's activation quantizers (libggml-cpu; ggml-cpu/quants.h, not installed).
extern "C" void quantize_row_q8_0(const float* x, void* y, int64_t k);
extern "C" void quantize_row_q8_K(const float* x, void* y, int64_t k);

namespace {

bool FindType(const char* name, ggml_type* type) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* type_name = ggml_type_name(static_cast<ggml_type>(t));
    if (type_name != nullptr && std::strcmp(type_name, name) == 0) {
      *type = static_cast<ggml_type>(t);
      return true;
    }
  }
  return false;
}

std::vector<char> ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

bool WriteAll(const char* path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(out);
}

int Usage() {
  std::fprintf(stderr,
               "usage: ggml_oracle quantize TYPE ROWS N_PER_ROW IN.f32 OUT.q OUT.f32\n"
               "       ggml_oracle dequantize TYPE N_VALUES IN.q OUT.f32\n"
               "       ggml_oracle activations q8_0|q8_K N_VALUES IN.f32 OUT.q\n"
               "       ggml_oracle rows TYPE ROWS N_PER_ROW IN.f32 OUT.q\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string verb = argv[1];
  ggml_type type;
  if (!FindType(argv[2], &type)) {
    std::fprintf(stderr, "unknown ggml type %s\n", argv[2]);
    return 2;
  }
  const ggml_type_traits* traits = ggml_get_type_traits(type);
  if (verb == "quantize" && argc == 8) {
    const long rows = std::atol(argv[3]), n_per_row = std::atol(argv[4]);
    const std::vector<char> in = ReadAll(argv[5]);
    if (in.size() != static_cast<size_t>(rows * n_per_row) * sizeof(float)) {
      std::fprintf(stderr, "%s holds %zu bytes, expected %ld floats\n", argv[5], in.size(),
                   rows * n_per_row);
      return 1;
    }
    std::vector<char> blocks(ggml_row_size(type, n_per_row) * rows);
    const size_t written = ggml_quantize_chunk(type, reinterpret_cast<const float*>(in.data()),
                                               blocks.data(), 0, rows, n_per_row, nullptr);
    if (written != blocks.size()) return 1;
    std::vector<float> values(static_cast<size_t>(rows * n_per_row));
    traits->to_float(blocks.data(), values.data(), rows * n_per_row);
    return WriteAll(argv[6], blocks.data(), blocks.size()) &&
                   WriteAll(argv[7], values.data(), values.size() * sizeof(float))
               ? 0
               : 1;
  }
  if (verb == "dequantize" && argc == 6) {
    const long n = std::atol(argv[3]);
    const std::vector<char> in = ReadAll(argv[4]);
    if (in.size() != ggml_row_size(type, n)) {
      std::fprintf(stderr, "%s holds %zu bytes, expected %zu\n", argv[4], in.size(),
                   ggml_row_size(type, n));
      return 1;
    }
    std::vector<float> values(static_cast<size_t>(n));
    traits->to_float(in.data(), values.data(), n);
    return WriteAll(argv[5], values.data(), values.size() * sizeof(float)) ? 0 : 1;
  }
  if (verb == "activations" && argc == 6 && (type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q8_K)) {
    const long n = std::atol(argv[3]);
    const std::vector<char> in = ReadAll(argv[4]);
    if (n % ggml_blck_size(type) != 0 || in.size() != static_cast<size_t>(n) * sizeof(float)) {
      std::fprintf(stderr, "%s holds %zu bytes, expected %ld floats in whole blocks\n", argv[4],
                   in.size(), n);
      return 1;
    }
    std::vector<char> blocks(ggml_row_size(type, n), 0);
    ggml_cpu_init();
    (type == GGML_TYPE_Q8_0 ? quantize_row_q8_0 : quantize_row_q8_K)(
        reinterpret_cast<const float*>(in.data()), blocks.data(), n);
    return WriteAll(argv[5], blocks.data(), blocks.size()) ? 0 : 1;
  }
  if (verb == "rows" && argc == 7) {
    const long rows = std::atol(argv[3]), n_per_row = std::atol(argv[4]);
    const std::vector<char> in = ReadAll(argv[5]);
    ggml_cpu_init();
    const ggml_from_float_t from_float = ggml_get_type_traits_cpu(type)->from_float;
    if (from_float == nullptr || n_per_row % ggml_blck_size(type) != 0 ||
        in.size() != static_cast<size_t>(rows * n_per_row) * sizeof(float)) {
      std::fprintf(stderr, "%s: no from_float, or not %ld rows of %ld floats in whole blocks\n",
                   argv[5], rows, n_per_row);
      return 1;
    }
    const size_t row_bytes = ggml_row_size(type, n_per_row);
    std::vector<char> blocks(row_bytes * rows, 0);
    for (long r = 0; r < rows; ++r) {
      from_float(reinterpret_cast<const float*>(in.data()) + r * n_per_row,
                 blocks.data() + r * row_bytes, n_per_row);
    }
    return WriteAll(argv[6], blocks.data(), blocks.size()) ? 0 : 1;
  }
  return Usage();
}
