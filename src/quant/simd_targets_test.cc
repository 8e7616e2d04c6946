// The quant SIMD kernels on every Highway target this build compiled and this CPU supports
// (e.g. AVX-512, AVX2 and the portable fallback), not only the one dispatch picks: each must be
// bit-identical to the scalar reference (dequantization) on odd block counts and segments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hwy/targets.h"
#include "quant/ggml_blocks.h"
#include "quant/mlx_quant.h"
#include "quant/test_blocks.h"
#include "quant/turbo_quant.h"

namespace proctor::quant {
namespace {

class EveryTarget : public ::testing::Test {
 protected:
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_F(EveryTarget, KernelsMatchReferences) {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::printf("target %s\n", hwy::TargetName(target));
    for (DType type :
         {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,
          DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL}) {
      const BlockTraits* traits = FindBlockTraits(type);
      const int n_blocks = 5;
      const auto raw = testing::RandomBlocks(type, n_blocks, 41);
      const size_t n = static_cast<size_t>(n_blocks) * traits->block_elems;
      std::vector<float> ref(n), fast(n);
      traits->dequantize_ref(raw.data(), n_blocks, ref.data());
      traits->dequantize_fast(raw.data(), n_blocks, fast.data());
      ASSERT_EQ(std::memcmp(ref.data(), fast.data(), n * 4), 0) << Name(type);
      const auto x = testing::RandomWeights(static_cast<int64_t>(n), 2);
      const float dot_ref = traits->dot_ref(raw.data(), n_blocks, x.data());
      EXPECT_NEAR(traits->dot_fast(raw.data(), n_blocks, x.data()), dot_ref,
                  1e-4 * (std::fabs(dot_ref) + 1.0f))
          << Name(type);
    }
    const auto w = testing::RandomWeights(2 * 384, 6);
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      const MlxQuantizedTensor q = QuantizeMlx(w.data(), 2, 384, MlxMode::kAffine, bits, 64);
      std::vector<float> ref(256), fast(256);
      DecodeMlxRowSegmentRef(q.View(), 1, 128, 256, ref.data());
      DecodeMlxRowSegment(q.View(), 1, 128, 256, fast.data());
      ASSERT_EQ(std::memcmp(ref.data(), fast.data(), ref.size() * 4), 0) << bits << " bits";
      std::vector<float> tile(2 * 256);
      DecodeMlxRowsSegment(q.View(), 0, 2, 128, 256, tile.data(), 256);
      ASSERT_EQ(std::memcmp(ref.data(), tile.data() + 256, ref.size() * 4), 0) << bits << " bits";
    }
    for (MlxMode mode : {MlxMode::kMxfp4, MlxMode::kMxfp8, MlxMode::kNvfp4}) {
      const int bits = mode == MlxMode::kMxfp8 ? 8 : 4, group = mode == MlxMode::kNvfp4 ? 16 : 32;
      const MlxQuantizedTensor q = QuantizeMlx(w.data(), 2, 384, mode, bits, group);
      std::vector<float> ref(384), fast(384);
      DecodeMlxRowSegmentRef(q.View(), 0, 0, 384, ref.data());
      DecodeMlxRowSegment(q.View(), 0, 0, 384, fast.data());
      ASSERT_EQ(std::memcmp(ref.data(), fast.data(), ref.size() * 4), 0) << MlxModeName(mode);
    }
    // TurboQuant rows, every key and value width: the SIMD tile decode is the scalar one's.
    const auto x = testing::RandomWeights(3 * 128, 8);
    for (const bool keys : {true, false}) {
      for (int bits : keys ? std::vector<int>{2, 4, 5, 8} : std::vector<int>{2, 3, 4, 8}) {
        std::vector<uint8_t> packed(static_cast<size_t>(3 * 128 * bits / 8));
        std::vector<uint16_t> scales(3 * 4), offsets(3 * 4);
        if (keys) {
          EncodeTurboKeys(x.data(), 3 * 128, bits, packed.data(), scales.data(), offsets.data(),
                          "keys");
        } else {
          EncodeTurboValues(x.data(), 3 * 128, 64, bits, packed.data(), scales.data(), "values");
        }
        const TurboRows rows{
            .part = keys ? TurboPart::kKeys : TurboPart::kValues,
            .bits = bits,
            .head_dim = 64,
            .packed = MatView{DType::kU8, 3, 128 * bits / 8, static_cast<size_t>(16 * bits),
                              packed.data()},
            .scales = MatView{DType::kF16, 3, 4, 8, reinterpret_cast<uint8_t*>(scales.data())},
            .offsets =
                keys ? MatView{DType::kF16, 3, 4, 8, reinterpret_cast<uint8_t*>(offsets.data())}
                     : MatView{}};
        std::vector<float> one(64), tile(3 * 64);
        DecodeTurboRowsSegment(rows, 0, 3, 64, 64, tile.data(), 64);
        for (int64_t r = 0; r < 3; ++r) {
          DecodeTurboRowSegment(rows, r, 64, 64, one.data());
          const std::vector<float> row(tile.begin() + r * 64, tile.begin() + (r + 1) * 64);
          ASSERT_EQ(std::memcmp(one.data(), row.data(), one.size() * 4), 0)
              << (keys ? "keys " : "values ") << bits << " bits, row " << r;
        }
      }
    }
  }
  RecordProperty("targets", static_cast<int>(targets.size()));
}

}  // namespace
}  // namespace proctor::quant
