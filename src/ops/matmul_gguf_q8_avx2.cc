// Matrix-matrix products (prefill, T >= 2) of GGUF block weights with 8-bit activations
// (ComputeMode::kQ8) on AVX2 integer dot products: the 32-wide types (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1; Q8_0 activation blocks) and Q2_K to Q6_K (Q8_K activation blocks).
//
// Sixteen weight rows form a panel, repacked once per chunk of tokens so that one 32-byte step
// holds the same 4 codes of 8 rows (two steps per panel; the 2- to 6-bit types' unsigned codes,
// Q8_0's signed ones). The tokens' codes come interleaved in tiles of 4 (InterleaveQ8Tiles). A
// token's 4 codes are broadcast against a step: vpmaddubsw then leaves row r's pair sums in
// 32-bit lane r, so 8 steps sum 32 values of 8 rows with no horizontal sums. The unsigned
// codes add the steps' pair sums in int16 (8 steps for 4-bit codes, 4 for 2-, 3- and 5-bit ones,
// 2 for 6-bit ones, below 2^15) before one vpmaddwd, which for the K-quants multiplies in each
// row's sub-block scale; Q8_0 goes through the sign trick and vpmaddwd per step. Four tokens share
// each loaded step.
//
// Each output runs the matrix-vector kernel's chains (matvec_gguf_q8_avx2.cc): for the 32-wide
// types acc += isum_b (d_w d_x) and min_acc += m_b s_b block by block, output acc + min_acc; for
// Q4_K / Q5_K acc += S (d d_x) and min_acc += M (dmin d_x) per super-block, S the exact integer
// sum of scale_j times the sub-block sums and M that of m_j times the activations' code sums,
// output acc - min_acc, and the same per 16 values for Q2_K; for Q3_K / Q6_K acc += S (d d_x), S
// with the offset (4, 32) taken through the code sums, output acc. So a token's logits are the same
// bits whether it is decoded alone or prefilled with others.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_avx2_codes.h"
#include "util/error.h"
#include "util/f16_table.h"

namespace proctor::ops::internal {
namespace {

constexpr int kHalves = 2;                    // 8-row halves of a panel
constexpr int kPanelRows = kQ8GemmPanelRows;  // one 32-bit lane per row of a half
static_assert(kPanelRows == 8 * kHalves);
constexpr int kTokenTile = kQ8GemmTokenTile;  // tokens sharing each loaded step
constexpr int64_t kChunkBytes = 2048 * 1024;  // activation codes per chunk of tokens
constexpr int kSliceBytes = 32 * kPanelRows;  // the panel's 32 values of 16 rows

// kPanelRows rows of w repacked, for all K / 32 slices of 32 values (a 32-wide block, or a
// K-quant sub-block).
struct Panel {
  std::vector<uint8_t> codes;  // [slice][step 0..7][half][row 0..7 of the half][4 codes]
  // 32-wide: [block][row] d_w, and the block minimum (Q4_1, Q5_1 only).
  // K-quants: [super-block][row] d and dmin.
  std::vector<float> d, m;
  // K-quants: [super-block][sub-block][row] the scale twice as int16 (vpmaddwd's operand), and
  // [super-block][pair of sub-blocks 2p, 2p + 1][row] their minimums as two int16.
  std::vector<int32_t> scales, mins;
};

// rows[8] (8 32-bit lanes each) transposed in place: rows[s] lane r = rows[r] lane s before.
PROCTOR_AVX2_TARGET inline void Transpose8x8(__m256i* rows) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 0..3, then 4..7
    const __m256i* tt = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi64(tt[0], tt[2]);  // lanes 0 | 4
    u[4 * h + 1] = _mm256_unpackhi_epi64(tt[0], tt[2]);  // 1 | 5
    u[4 * h + 2] = _mm256_unpacklo_epi64(tt[1], tt[3]);  // 2 | 6
    u[4 * h + 3] = _mm256_unpackhi_epi64(tt[1], tt[3]);  // 3 | 7
  }
  for (int s = 0; s < 4; ++s) {
    rows[s] = _mm256_permute2x128_si256(u[s], u[4 + s], 0x20);
    rows[s + 4] = _mm256_permute2x128_si256(u[s], u[4 + s], 0x31);
  }
}

// The 32 codes of half h of a panel slice (codes[i]: row 8h + i) stored as steps.
PROCTOR_AVX2_TARGET inline void StoreSlice(__m256i* codes, int h, uint8_t* slice) {
  Transpose8x8(codes);
  for (int s = 0; s < 8; ++s) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(slice + 32 * (kHalves * s + h)), codes[s]);
  }
}

// ---- what every weight type shares ----------------------------------------------------

// One token's scales as the kernel reads them (its codes come from the tile's interleaved ones).
struct TokenScales {
  const float* scale;         // [K / 32]: d_x
  const float* sum32;         // [K / 32]: sum(x^) per 32 values
  const int16_t* code_sum16;  // [K / 16]: sum of the codes per 16 values
  const int16_t* code_sum32;  // [K / 32]: sum of the codes per 32 values
};

// Codes p[0..3] in every 32-bit lane.
PROCTOR_AVX2_TARGET inline __m256i Broadcast4(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, 4);
  return _mm256_set1_epi32(four);
}

// isum[kHalves * tt + h] += the pair sums of 32 unsigned codes of `kBits` bits (the slice's
// steps) times the TT tokens' codes x ([step][token][4]), widened by vpmaddwd against
// widen[kHalves * g + h] for the values 16g..16g+15 (ones, or each row's scale as two int16);
// lane r: row 8h + r. Exact.
template <int kBits, int TT>
PROCTOR_AVX2_TARGET inline void UnsignedSums(const uint8_t* steps, const int8_t* x,
                                             const __m256i* widen, __m256i* isum) {
  static_assert(kBits >= 2 && kBits <= 6);
  constexpr int kSums = TT * kHalves;
  // Steps whose int16 pair sums may be added before vpmaddwd: 8 x 2 x 15 x 128, 4 x 2 x 31 x 128
  // and 2 x 2 x 63 x 128 stay below 2^15; the 2- and 3-bit codes (Q2_K, Q3_K) stop at 4 steps,
  // the 16 values of a group with its own scale.
  constexpr int kSteps = kBits == 4 ? 8 : kBits == 6 ? 2 : 4;
  for (int s0 = 0; s0 < 8; s0 += kSteps) {
    __m256i pairs[kSums];
    for (int i = 0; i < kSums; ++i) pairs[i] = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int s = s0; s < s0 + kSteps; ++s) {
      __m256i w[kHalves];
      for (int h = 0; h < kHalves; ++h) {
        w[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(steps + 32 * (kHalves * s + h)));
      }
      for (int tt = 0; tt < TT; ++tt) {
        const __m256i xs = Broadcast4(x + kTokenTile * 4 * s + 4 * tt);
        for (int h = 0; h < kHalves; ++h) {
          pairs[kHalves * tt + h] =
              _mm256_add_epi16(pairs[kHalves * tt + h], _mm256_maddubs_epi16(w[h], xs));
        }
      }
    }
    for (int tt = 0; tt < TT; ++tt) {
      for (int h = 0; h < kHalves; ++h) {
        isum[kHalves * tt + h] = _mm256_add_epi32(
            isum[kHalves * tt + h],
            _mm256_madd_epi16(pairs[kHalves * tt + h], widen[kHalves * (s0 / 4) + h]));
      }
    }
  }
}

// The same for Q8_0's signed codes: |w| against x signed by w, widened every step.
template <int TT>
PROCTOR_AVX2_TARGET inline void SignedSums(const uint8_t* steps, const int8_t* x, __m256i* isum) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 1
  for (int s = 0; s < 8; ++s) {
    __m256i w[kHalves], w_abs[kHalves];
    for (int h = 0; h < kHalves; ++h) {
      w[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(steps + 32 * (kHalves * s + h)));
      w_abs[h] = _mm256_sign_epi8(w[h], w[h]);
    }
    for (int tt = 0; tt < TT; ++tt) {
      const __m256i xs = Broadcast4(x + kTokenTile * 4 * s + 4 * tt);
      for (int h = 0; h < kHalves; ++h) {
        const __m256i pairs = _mm256_maddubs_epi16(w_abs[h], _mm256_sign_epi8(xs, w[h]));
        isum[kHalves * tt + h] =
            _mm256_add_epi32(isum[kHalves * tt + h], _mm256_madd_epi16(pairs, ones));
      }
    }
  }
}

// The output lanes of TT tokens (v[kHalves * tt + h]: rows 8h..8h+7) into out[tt][0, rows).
template <int TT>
PROCTOR_AVX2_TARGET inline void StoreOutputs(const __m256* v, float* const* out, int rows) {
  for (int tt = 0; tt < TT; ++tt) {
    alignas(32) float lanes[kPanelRows];
    for (int h = 0; h < kHalves; ++h) _mm256_store_ps(lanes + 8 * h, v[kHalves * tt + h]);
    std::copy(lanes, lanes + rows, out[tt]);
  }
}

// dots[kHalves * tt + h] += the rows' int16 pairs (rows[16], lane r of half h: row 8h + r) times
// token tt's two int16 values pair[tt][0..1], summed by vpmaddwd; exact.
template <int TT>
PROCTOR_AVX2_TARGET inline void AddPairDots(const int32_t* rows, const int16_t* const* pair,
                                            __m256i* dots) {
  __m256i m[kHalves];
  for (int h = 0; h < kHalves; ++h) {
    m[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + 8 * h));
  }
  for (int tt = 0; tt < TT; ++tt) {
    const __m256i values = _mm256_set1_epi32(Int16Pair(pair[tt][0], pair[tt][1]));
    for (int h = 0; h < kHalves; ++h) {
      dots[kHalves * tt + h] =
          _mm256_add_epi32(dots[kHalves * tt + h], _mm256_madd_epi16(m[h], values));
    }
  }
}

// The 8 slices of a K-quant super-block sb (codes[slice][row of half h]) into the panel.
PROCTOR_AVX2_TARGET inline void StoreSuperBlock(__m256i (*codes)[8], int h, int64_t sb,
                                                Panel* panel) {
  for (int j = 0; j < 8; ++j) {
    StoreSlice(codes[j], h, panel->codes.data() + (sb * 8 + j) * kSliceBytes);
  }
}

// ---- the 32-wide types --------------------------------------------------------------------

// The 32 codes of one block of `Block`, as vpmaddubsw's unsigned operand takes them (Q8_0: signed).
template <class Block>
PROCTOR_AVX2_TARGET inline __m256i BlockCodes(const uint8_t* block) {
  if constexpr (std::is_same_v<Block, Q8_0Block>) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  } else {
    __m128i lo, hi;
    Block::StoredCodes(block, &lo, &hi);
    return _mm256_set_m128i(hi, lo);
  }
}

template <class Block>
struct BlockKernel {
  static constexpr int kUnitValues = 32;

  // Rows [n0, n0 + rows) of w into `panel`; the rows past them get codes 0 and scales 0.
  PROCTOR_AVX2_TARGET static void Repack(const MatView& w, int64_t n0, int rows, int64_t n_blocks,
                                         Panel* panel) {
    const float* f16 = F16ToF32Table();
    panel->codes.resize(static_cast<size_t>(n_blocks * kSliceBytes));
    panel->d.resize(static_cast<size_t>(n_blocks * kPanelRows));
    if constexpr (Block::kHasMin) panel->m.resize(static_cast<size_t>(n_blocks * kPanelRows));
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int h = 0; h < kHalves; ++h) {
        __m256i codes[8];
        for (int i = 0; i < 8; ++i) {
          const int r = 8 * h + i;
          float d = 0.0f, m = 0.0f;
          codes[i] = _mm256_setzero_si256();
          if (r < rows) {
            const uint8_t* block = w.Row(n0 + r) + b * Block::kBytes;
            codes[i] = BlockCodes<Block>(block);
            d = HalfAt(f16, block);
            if constexpr (Block::kHasMin) m = HalfAt(f16, block + Block::kMinAt);
          }
          panel->d[b * kPanelRows + r] = d;
          if constexpr (Block::kHasMin) panel->m[b * kPanelRows + r] = m;
        }
        StoreSlice(codes, h, panel->codes.data() + b * kSliceBytes);
      }
    }
  }

  // TT tokens against one panel of a 32-wide type: every block's sums and the chain
  // acc += isum (d_w d_x), then the chain of the minimum or offset term; out acc + min_acc.
  template <int TT>
  PROCTOR_AVX2_TARGET static void Tokens(const Panel& panel, int64_t n_blocks, const int8_t* codes,
                                         const TokenScales* tokens, float* const* out, int rows) {
    constexpr int kSums = TT * kHalves;
    __m256i ones[2 * kHalves];
    for (__m256i& v : ones) v = _mm256_set1_epi16(1);
    __m256 acc[kSums];
    for (int i = 0; i < kSums; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      __m256i isum[kSums];
      for (int i = 0; i < kSums; ++i) isum[i] = _mm256_setzero_si256();
      const uint8_t* steps = panel.codes.data() + b * kSliceBytes;
      const int8_t* x = codes + 32 * kTokenTile * b;
      if constexpr (std::is_same_v<Block, Q8_0Block>) {
        SignedSums<TT>(steps, x, isum);
      } else {
        constexpr bool kFourBits =
            std::is_same_v<Block, Q4Block<false>> || std::is_same_v<Block, Q4Block<true>>;
        UnsignedSums<kFourBits ? 4 : 5, TT>(steps, x, ones, isum);
      }
      for (int h = 0; h < kHalves; ++h) {
        const __m256 d_w = _mm256_loadu_ps(panel.d.data() + b * kPanelRows + 8 * h);
        for (int tt = 0; tt < TT; ++tt) {
          acc[kHalves * tt + h] = _mm256_fmadd_ps(
              _mm256_cvtepi32_ps(isum[kHalves * tt + h]),
              _mm256_mul_ps(d_w, _mm256_set1_ps(tokens[tt].scale[b])), acc[kHalves * tt + h]);
        }
      }
    }
    __m256 min_acc[kSums];
    for (int i = 0; i < kSums; ++i) min_acc[i] = _mm256_setzero_ps();
    if constexpr (kHasMinTerm<Block>) {
      const float* m_rows = Block::kHasMin ? panel.m.data() : panel.d.data();  // Q4_0 / Q5_0: d_w
      for (int64_t b = 0; b < n_blocks; ++b) {
        for (int h = 0; h < kHalves; ++h) {
          const __m256 m = _mm256_loadu_ps(m_rows + b * kPanelRows + 8 * h);
          for (int tt = 0; tt < TT; ++tt) {
            const float f = MinTermFactor<Block>(tokens[tt].sum32[b]);
            min_acc[kHalves * tt + h] =
                _mm256_fmadd_ps(m, _mm256_set1_ps(f), min_acc[kHalves * tt + h]);
          }
        }
      }
    }
    __m256 v[kSums];
    for (int i = 0; i < kSums; ++i) v[i] = _mm256_add_ps(acc[i], min_acc[i]);
    StoreOutputs<TT>(v, out, rows);
  }
};

// ---- Q4_K, Q5_K --------------------------------------------------------------------------

template <bool kFifthBit>
struct KQuantKernel {
  static constexpr int kUnitValues = 256;

  // Q4_K (144-byte super-blocks: d, dmin, 12 scale bytes, qs[128]) and Q5_K (176: qh[32] before
  // qs): chunk c's low nibbles (plus Q5_K's bit 2c of qh) are sub-block 2c, its high nibbles (bit
  // 2c + 1) sub-block 2c + 1, values in order.
  PROCTOR_AVX2_TARGET static void Repack(const MatView& w, int64_t n0, int rows, int64_t n_super,
                                         Panel* panel) {
    constexpr int kBytes = kFifthBit ? 176 : 144;
    const float* f16 = F16ToF32Table();
    panel->codes.resize(static_cast<size_t>(n_super * 8 * kSliceBytes));
    panel->d.resize(static_cast<size_t>(n_super * kPanelRows));
    panel->m.resize(static_cast<size_t>(n_super * kPanelRows));
    panel->scales.resize(static_cast<size_t>(n_super * 8 * kPanelRows));
    panel->mins.resize(static_cast<size_t>(n_super * 4 * kPanelRows));
    for (int64_t sb = 0; sb < n_super; ++sb) {
      for (int h = 0; h < kHalves; ++h) {
        __m256i codes[8][8];  // [sub-block][row of the half]
        for (int i = 0; i < 8; ++i) {
          const int r = 8 * h + i;
          uint8_t sc[8] = {}, mn[8] = {};
          float d = 0.0f, dmin = 0.0f;
          for (int j = 0; j < 8; ++j) codes[j][i] = _mm256_setzero_si256();
          if (r < rows) {
            const uint8_t* block = w.Row(n0 + r) + sb * kBytes;
            d = HalfAt(f16, block);
            dmin = HalfAt(f16, block + 2);
            __m128i sc_v, mn_v;
            UnpackK4(block + 4, &sc_v, &mn_v);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(sc), sc_v);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(mn), mn_v);
            for (int c = 0; c < 4; ++c) {
              Q45_KCodes<kFifthBit>(block, c, &codes[2 * c][i], &codes[2 * c + 1][i]);
            }
          }
          panel->d[sb * kPanelRows + r] = d;
          panel->m[sb * kPanelRows + r] = dmin;
          for (int j = 0; j < 8; ++j) {
            panel->scales[(sb * 8 + j) * kPanelRows + r] = Int16Pair(sc[j], sc[j]);
          }
          for (int p = 0; p < 4; ++p) {
            panel->mins[(sb * 4 + p) * kPanelRows + r] = Int16Pair(mn[2 * p], mn[2 * p + 1]);
          }
        }
        StoreSuperBlock(codes, h, sb, panel);
      }
    }
  }

  // TT tokens against one panel of Q4_K / Q5_K: per super-block S = sum_j scale_j (sub-block j's
  // integer sum) and M = sum_j m_j (code sum of j), exact in int32 (S below 8 x 63 x 2^15, M below
  // 8 x 63 x 4064), then acc += S (d d_x), min_acc += M (dmin d_x); out acc - min_acc.
  template <int TT>
  PROCTOR_AVX2_TARGET static void Tokens(const Panel& panel, int64_t n_super, const int8_t* codes,
                                         const TokenScales* tokens, float* const* out, int rows) {
    constexpr int kSums = TT * kHalves;
    __m256 acc[kSums], min_acc[kSums];
    for (int i = 0; i < kSums; ++i) acc[i] = min_acc[i] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < n_super; ++sb) {
      __m256i sums[kSums], mins[kSums];
      for (int i = 0; i < kSums; ++i) sums[i] = mins[i] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const int64_t slice = sb * 8 + j;
        __m256i scales[2 * kHalves];  // the same scale for both groups of 16 values
        for (int h = 0; h < kHalves; ++h) {
          scales[h] = scales[kHalves + h] = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(panel.scales.data() + slice * kPanelRows + 8 * h));
        }
        UnsignedSums<kFifthBit ? 5 : 4, TT>(panel.codes.data() + slice * kSliceBytes,
                                            codes + 32 * kTokenTile * slice, scales, sums);
      }
      for (int p = 0; p < 4; ++p) {
        const int16_t* code_sums[TT];
        for (int tt = 0; tt < TT; ++tt) code_sums[tt] = tokens[tt].code_sum32 + 8 * sb + 2 * p;
        AddPairDots<TT>(panel.mins.data() + (sb * 4 + p) * kPanelRows, code_sums, mins);
      }
      for (int h = 0; h < kHalves; ++h) {
        const __m256 d = _mm256_loadu_ps(panel.d.data() + sb * kPanelRows + 8 * h);
        const __m256 dmin = _mm256_loadu_ps(panel.m.data() + sb * kPanelRows + 8 * h);
        for (int tt = 0; tt < TT; ++tt) {
          const __m256 d_x = _mm256_set1_ps(tokens[tt].scale[8 * sb]);
          const int i = kHalves * tt + h;
          acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[i]), _mm256_mul_ps(d, d_x), acc[i]);
          min_acc[i] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins[i]), _mm256_mul_ps(dmin, d_x), min_acc[i]);
        }
      }
    }
    __m256 v[kSums];
    for (int i = 0; i < kSums; ++i) v[i] = _mm256_sub_ps(acc[i], min_acc[i]);
    StoreOutputs<TT>(v, out, rows);
  }
};

// ---- Q2_K, Q3_K, Q6_K: 16 groups of 16 values ----------------------------------------------

// Format: matvec_gguf_avx2_codes.h's Q2_KGroups, Q3_KGroups or Q6_KGroups (slice j of a
// super-block: values 32j..32j+31, groups 2j and 2j + 1).
template <class Format>
struct Groups16Kernel {
  static constexpr int kUnitValues = 256;

  // Rows [n0, n0 + rows) into `panel`: the slices' unsigned codes, d (and dmin), each group's
  // scale twice as int16, and per pair of groups (2p, 2p + 1) their minimums (Q2_K) or their
  // scales (the offset's second dot) as two int16.
  PROCTOR_AVX2_TARGET static void Repack(const MatView& w, int64_t n0, int rows, int64_t n_super,
                                         Panel* panel) {
    const float* f16 = F16ToF32Table();
    panel->codes.resize(static_cast<size_t>(n_super * 8 * kSliceBytes));
    panel->d.resize(static_cast<size_t>(n_super * kPanelRows));
    if constexpr (Format::kHasMin) panel->m.resize(static_cast<size_t>(n_super * kPanelRows));
    panel->scales.resize(static_cast<size_t>(n_super * 16 * kPanelRows));
    panel->mins.resize(static_cast<size_t>(n_super * 8 * kPanelRows));
    for (int64_t sb = 0; sb < n_super; ++sb) {
      for (int h = 0; h < kHalves; ++h) {
        __m256i codes[8][8];  // [slice][row of the half]
        for (int i = 0; i < 8; ++i) {
          const int r = 8 * h + i;
          alignas(16) int8_t sc[16] = {}, mn[16] = {};
          float d = 0.0f, dmin = 0.0f;
          for (int j = 0; j < 8; ++j) codes[j][i] = _mm256_setzero_si256();
          if (r < rows) {
            const uint8_t* block = w.Row(n0 + r) + sb * Format::kBytes;
            _mm_store_si128(reinterpret_cast<__m128i*>(sc), Format::Scales(block));
            d = HalfAt(f16, block + Format::kD);
            if constexpr (Format::kHasMin) {
              _mm_store_si128(reinterpret_cast<__m128i*>(mn), Format::Mins(block));
              dmin = HalfAt(f16, block + Format::kDmin);
            }
            for (int j = 0; j < 8; ++j) codes[j][i] = Format::Slice(block, j);
          }
          panel->d[sb * kPanelRows + r] = d;
          if constexpr (Format::kHasMin) panel->m[sb * kPanelRows + r] = dmin;
          for (int g = 0; g < 16; ++g) {
            panel->scales[(sb * 16 + g) * kPanelRows + r] = Int16Pair(sc[g], sc[g]);
          }
          const int8_t* second = Format::kHasMin ? mn : sc;
          for (int p = 0; p < 8; ++p) {
            panel->mins[(sb * 8 + p) * kPanelRows + r] =
                Int16Pair(second[2 * p], second[2 * p + 1]);
          }
        }
        StoreSuperBlock(codes, h, sb, panel);
      }
    }
  }

  // TT tokens against one panel: per super-block S = sum_g scale_g (group g's integer sum) and
  // D = sum_g v_g (code sum of g), v_g the minimum (Q2_K) or the scale, exact in int32 (below
  // 2^29 + 2^28). Q2_K: acc += S (d d_x), min_acc += D (dmin d_x), out acc - min_acc; Q3_K, Q6_K:
  // acc += (S - o D) (d d_x) with the offset o, out acc.
  template <int TT>
  PROCTOR_AVX2_TARGET static void Tokens(const Panel& panel, int64_t n_super, const int8_t* codes,
                                         const TokenScales* tokens, float* const* out, int rows) {
    constexpr int kSums = TT * kHalves;
    constexpr int kShift = kOffsetShift<Format>;
    __m256 acc[kSums], min_acc[kSums];
    for (int i = 0; i < kSums; ++i) acc[i] = min_acc[i] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < n_super; ++sb) {
      __m256i sums[kSums], dots[kSums];
      for (int i = 0; i < kSums; ++i) sums[i] = dots[i] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const int64_t slice = sb * 8 + j;
        __m256i scales[2 * kHalves];  // groups 2j, 2j + 1
        for (int g = 0; g < 2; ++g) {
          for (int h = 0; h < kHalves; ++h) {
            scales[kHalves * g + h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                panel.scales.data() + (sb * 16 + 2 * j + g) * kPanelRows + 8 * h));
          }
        }
        UnsignedSums<Format::kBits, TT>(panel.codes.data() + slice * kSliceBytes,
                                        codes + 32 * kTokenTile * slice, scales, sums);
      }
      for (int p = 0; p < 8; ++p) {
        const int16_t* code_sums[TT];
        for (int tt = 0; tt < TT; ++tt) code_sums[tt] = tokens[tt].code_sum16 + 16 * sb + 2 * p;
        AddPairDots<TT>(panel.mins.data() + (sb * 8 + p) * kPanelRows, code_sums, dots);
      }
      for (int h = 0; h < kHalves; ++h) {
        const __m256 d = _mm256_loadu_ps(panel.d.data() + sb * kPanelRows + 8 * h);
        for (int tt = 0; tt < TT; ++tt) {
          const __m256 d_x = _mm256_set1_ps(tokens[tt].scale[8 * sb]);
          const int i = kHalves * tt + h;
          if constexpr (Format::kHasMin) {
            const __m256 dmin = _mm256_loadu_ps(panel.m.data() + sb * kPanelRows + 8 * h);
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[i]), _mm256_mul_ps(d, d_x), acc[i]);
            min_acc[i] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[i]), _mm256_mul_ps(dmin, d_x), min_acc[i]);
          } else {
            const __m256i s = _mm256_sub_epi32(sums[i], _mm256_slli_epi32(dots[i], kShift));
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, d_x), acc[i]);
          }
        }
      }
    }
    __m256 v[kSums];
    for (int i = 0; i < kSums; ++i) v[i] = _mm256_sub_ps(acc[i], min_acc[i]);
    StoreOutputs<TT>(v, out, rows);
  }
};

// ---- the walk over chunks of tokens, panels and tiles --------------------------------------

template <class Kernel>
PROCTOR_AVX2_TARGET void Run(const Q8TokenTiles& x, const MatView& w, MutMatF32 out,
                             int64_t n_begin, int64_t n_end) {
  const int64_t K = w.cols, units = K / Kernel::kUnitValues, T = x.T;
  const int64_t chunk_tokens = std::max<int64_t>(1, kChunkBytes / K / kTokenTile) * kTokenTile;
  thread_local Panel panel;
  for (int64_t t0 = 0; t0 < T; t0 += chunk_tokens) {
    const int64_t t1 = std::min(T, t0 + chunk_tokens);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, n_end - n0));
      Kernel::Repack(w, n0, rows, units, &panel);
      for (int64_t t = t0; t < t1; t += kTokenTile) {
        const int tile = static_cast<int>(std::min<int64_t>(kTokenTile, t1 - t));
        const int8_t* codes = x.tile_codes + t * K;  // tile t / kTokenTile, K codes per token
        TokenScales tokens[kTokenTile];
        float* outs[kTokenTile];
        for (int tt = 0; tt < tile; ++tt) {
          const ActivationsQ8& a = x.tokens[t + tt];
          tokens[tt] =
              TokenScales{a.scale.data(), a.sum32.data(), a.code_sum16.data(), a.code_sum32.data()};
          outs[tt] = out.Row(t + tt) + n0;
        }
        switch (tile) {
          case 4:
            Kernel::template Tokens<4>(panel, units, codes, tokens, outs, rows);
            break;
          case 3:
            Kernel::template Tokens<3>(panel, units, codes, tokens, outs, rows);
            break;
          case 2:
            Kernel::template Tokens<2>(panel, units, codes, tokens, outs, rows);
            break;
          default:
            Kernel::template Tokens<1>(panel, units, codes, tokens, outs, rows);
            break;
        }
      }
    }
  }
}

}  // namespace

bool Q8GemmAvx2Covers(DType type) {
  switch (type) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void InterleaveQ8Tiles(const ActivationsQ8* x, int64_t T, int64_t K, int64_t tile_tokens,
                       int64_t tile_begin, int64_t tile_end, int8_t* tile_codes) {
  for (int64_t i = tile_begin; i < tile_end; ++i) {
    int8_t* tile = tile_codes + i * tile_tokens * K;
    for (int64_t tt = 0; tt < tile_tokens; ++tt) {
      const int64_t t = i * tile_tokens + tt;
      const int8_t* src = nullptr;  // tokens past T: zeros
      if (t < T) {
        CHECK(static_cast<int64_t>(x[t].codes.size()) == K);
        src = x[t].codes.data();
      }
      for (int64_t k = 0; k < K; k += 4) {  // step k / 4: [token][4 codes]
        int8_t* dst = tile + tile_tokens * k + 4 * tt;
        if (src != nullptr) {
          std::memcpy(dst, src + k, 4);
        } else {
          std::memset(dst, 0, 4);
        }
      }
    }
  }
}

void MatMulGgufQ8Avx2(const Q8TokenTiles& x, const MatView& w, MutMatF32 out, int64_t n_begin,
                      int64_t n_end) {
  CHECK(Q8GemmAvx2Covers(w.type) && CpuFeatures::Host().avx2_fma);
  CHECK_MSG(w.cols % static_cast<int64_t>(Info(w.type).block_elems) == 0 && out.rows == x.T,
            "{} x [{}, {}] out [{}, {}]", Name(w.type), x.T, w.cols, out.rows, out.cols);
  for (int64_t t = 0; t < x.T; ++t) {
    CHECK_MSG(static_cast<int64_t>(x.tokens[t].codes.size()) == w.cols &&
                  x.tokens[t].blocks == Q8BlocksFor(w.type),
              "token {}: {} activation codes for {} rows of {}", t, x.tokens[t].codes.size(),
              Name(w.type), w.cols);
  }
  switch (w.type) {
    case DType::kQ8_0:
      return Run<BlockKernel<Q8_0Block>>(x, w, out, n_begin, n_end);
    case DType::kQ4_0:
      return Run<BlockKernel<Q4Block<false>>>(x, w, out, n_begin, n_end);
    case DType::kQ4_1:
      return Run<BlockKernel<Q4Block<true>>>(x, w, out, n_begin, n_end);
    case DType::kQ5_0:
      return Run<BlockKernel<Q5Block<false>>>(x, w, out, n_begin, n_end);
    case DType::kQ5_1:
      return Run<BlockKernel<Q5Block<true>>>(x, w, out, n_begin, n_end);
    case DType::kQ4_K:
      return Run<KQuantKernel<false>>(x, w, out, n_begin, n_end);
    case DType::kQ5_K:
      return Run<KQuantKernel<true>>(x, w, out, n_begin, n_end);
    case DType::kQ2_K:
      return Run<Groups16Kernel<Q2_KGroups>>(x, w, out, n_begin, n_end);
    case DType::kQ3_K:
      return Run<Groups16Kernel<Q3_KGroups>>(x, w, out, n_begin, n_end);
    case DType::kQ6_K:
      return Run<Groups16Kernel<Q6_KGroups>>(x, w, out, n_begin, n_end);
    default:
      CHECK_MSG(false, "no 8-bit-activation matmul for {}", Name(w.type));
  }
}

}  // namespace proctor::ops::internal
