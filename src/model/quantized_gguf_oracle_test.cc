// Files made by llama.cpp's own quantizer, read by proctor: a random F32 llama GGUF whose widths
// are multiples of 256 (tools/write_quant_test_model.py) is quantized with llama_model_quantize
// for each file type (Q4_0 ... Q6_K, Q3_K_M / Q4_K_M / Q5_K_M mixes, IQ4_NL), and every tensor
// proctor reads from the result (GgufFile + the quant layer's reference and SIMD dequantizers) must
// be bit-identical to ggml's own dequantization of it (tools/llama_quantize_oracle.cc, built by
// tools/oracle/setup.sh against the llama.cpp source of the llama-cpp-python 0.3.36 sdist).
// Skips when that oracle or /usr/bin/python3 with numpy is unavailable.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "quant/ggml_blocks.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

// The llama_quantize_oracle binary (tools/oracle/setup.sh), or empty with the reason in `why`.
std::string QuantizeOraclePath(std::string* why) {
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  *why = llama_cpp.problem;
  return llama_cpp.Path("llama_quantize_oracle");
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct FileType {
  const char* name;
  int llama_ftype;
};

class LlamaQuantizedGguf : public ::testing::TestWithParam<FileType> {};

TEST_P(LlamaQuantizedGguf, EveryTensorDequantizesLikeGgml) {
  std::string why;
  const std::string oracle = QuantizeOraclePath(&why);
  if (oracle.empty()) GTEST_SKIP() << "oracle unavailable: " << why;
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 missing";
  const FileType& ft = GetParam();
  const auto work = std::filesystem::temp_directory_path() /
                    fmt::format("proctor_llama_quant_{}_{}", getpid(), ft.name);
  std::filesystem::create_directories(work);
  const std::string f32_path = (work / "f32.gguf").string(), q_path = (work / "q.gguf").string();
  const std::string writer = fmt::format(
      "/usr/bin/python3 {}/tools/write_quant_test_model.py {} >&2", PROCTOR_SOURCE_DIR, f32_path);
  if (std::system(writer.c_str()) != 0) {
    std::filesystem::remove_all(work);
    GTEST_SKIP() << "tools/write_quant_test_model.py failed (numpy missing?)";
  }
  const std::string quantize = fmt::format("{} {} {} {} {} > {}/log.txt 2>&1", oracle, f32_path,
                                           q_path, ft.llama_ftype, work.string(), work.string());
  ASSERT_EQ(std::system(quantize.c_str()), 0) << "see " << work.string() << "/log.txt";

  const auto file = GgufFile::Open(q_path);
  std::ifstream index(work / "index.txt");
  std::string name, ggml_type;
  int64_t n_values = 0;
  int tensor = 0, quantized = 0;
  while (index >> name >> ggml_type >> n_values) {
    SCOPED_TRACE(fmt::format("{} {} ({})", name, ggml_type, ft.name));
    const GgufTensorInfo* info = file->FindTensor(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(std::string(Name(info->type)), Lower(ggml_type));
    std::ifstream values_file(work / fmt::format("{}.f32", tensor++), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(values_file)), {});
    ASSERT_EQ(bytes.size(), static_cast<size_t>(n_values) * 4);
    std::vector<float> ours(static_cast<size_t>(n_values)), fast(ours.size());
    if (info->type == DType::kF32) {
      ASSERT_EQ(info->bytes, bytes.size());
      std::memcpy(ours.data(), info->data, info->bytes);
      fast = ours;
    } else {
      const quant::BlockTraits* traits = quant::FindBlockTraits(info->type);
      ASSERT_NE(traits, nullptr);
      const int64_t n_blocks = n_values / traits->block_elems;
      ASSERT_EQ(info->bytes, static_cast<size_t>(n_blocks * traits->block_bytes));
      traits->dequantize_ref(info->data, n_blocks, ours.data());
      traits->dequantize_fast(info->data, n_blocks, fast.data());
      ++quantized;
    }
    ASSERT_EQ(std::memcmp(ours.data(), bytes.data(), bytes.size()), 0) << "reference";
    ASSERT_EQ(std::memcmp(fast.data(), bytes.data(), bytes.size()), 0) << "SIMD";
  }
  EXPECT_EQ(tensor, static_cast<int>(file->tensors().size()));
  EXPECT_GE(quantized, 9);  // every matrix of the model
  std::filesystem::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(
    FileTypes, LlamaQuantizedGguf,
    ::testing::Values(FileType{"Q4_0", 2}, FileType{"Q4_1", 3}, FileType{"Q8_0", 7},
                      FileType{"Q5_0", 8}, FileType{"Q5_1", 9}, FileType{"Q2_K", 10},
                      FileType{"Q3_K_M", 12}, FileType{"Q4_K_M", 15}, FileType{"Q5_K_M", 17},
                      FileType{"Q6_K", 18}, FileType{"IQ4_NL", 25}),
    [](const ::testing::TestParamInfo<FileType>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace proctor
