// Matrix-vector kernels for the GGUF block types on 8-bit activations (ComputeMode::kQ8, decode,
// T == 1) with AVX2 integer dot products, as llama.cpp's CPU backend computes them: each weight
// block's codes times the activation codes (Q8_0 blocks for the 32-wide types, Q8_K for the
// K-quants: activations_q8.h) summed exactly in int32 (vpmaddubsw, then vpmaddwd), scaled in f32
// by the weight scale times the activation scale. The result is w · x^ (x^ the dequantized
// activations) up to f32 rounding of the scaled block sums.
//
//  - 32-wide types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): the block's 32 codes (matvec_gguf_avx2_codes.h)
//    against the activation block, four rows' integer sums packed into one vector:
//    acc += d_w d_x * isum; a block minimum m adds m * sum(x^). Q8_0's signed codes go through
//    the sign trick (vpmaddubsw on |w| and x signed by w); the 4- and 5-bit types' stored codes
//    are unsigned and enter vpmaddubsw as they are, Q4_0 / Q5_0's offset o (8, 16) then a block
//    minimum -o d_w. Q4_0 / Q4_1 run two blocks per step (RowsQ4Pairs).
//  - Q4_K, Q5_K: per 64-value chunk the low nibbles (plus Q5_K's fifth bit) are sub-block 2c, the
//    high ones 2c + 1; each sub-block's 6-bit scale multiplies its pair sums in vpmaddwd and the
//    super-block's sums stay in int32 (Q8_K has one d_x per super-block): acc += d d_x * sum_j
//    scale_j isum_j; dmin * m_j * sum(x^ of sub-block j) is subtracted at the end.
//  - Q2_K, Q3_K, Q6_K: 16 groups of 16 values (the Groups formats of matvec_gguf_avx2_codes.h),
//    unsigned codes (2, 3, 6 bits); the per-16 scales multiply in vpmaddwd, summed in int32 over
//    the super-block; Q3_K's and Q6_K's offset (4, 32) is subtracted once per super-block as
//    o d sum_g scale_g sum(x^ of g), Q2_K's minimums as dmin sum_g m_g sum(x^ of g) at the end.
// Every output is one fixed chain over its row, so results do not depend on thread partitions;
// the prefill kernel (matmul_gguf_q8_avx2.cc) runs the same chains.
#include <immintrin.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_avx2_codes.h"
#include "ops/matvec_gguf_rows.h"
#include "util/error.h"

namespace proctor::ops::internal {
namespace {

struct Inputs {
  const int8_t* codes;  // [K]
  // [K rounded down to 64]: per pair of blocks 2p, 2p + 1, the 32 bytes [values 0..15 of 2p |
  // values 0..15 of 2p + 1] then [16..31 of 2p | 16..31 of 2p + 1] (PairCodes; Q4 types only).
  const int8_t* pair_codes;
  const float* scale;         // [K / 32]
  const float* sum32;         // [K / 32]
  const int16_t* code_sum16;  // [K / 16]
  const int16_t* code_sum32;  // [K / 32]
  int64_t n_blocks;           // weight blocks per row
  mutable Prefetcher prefetch;
};

PROCTOR_AVX2_TARGET inline __m256i Load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// sum of w_i * x_i over 32 signed int8 codes, as 8 int32 lanes (lanes 0-3: values 0..15, lanes
// 4-7: values 16..31), exact: |w| <= 128 and |x| <= 127 keep vpmaddubsw's pair sums in int16.
PROCTOR_AVX2_TARGET inline __m256i DotCodes(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// sum of scale_g * w_i * x_i over 32 unsigned codes w (0..63) and signed x, the scale of values
// 0..15 in the low 8 int16 of `scales` and of 16..31 in the high 8, as 8 int32 lanes (exact).
PROCTOR_AVX2_TARGET inline __m256i DotScaled(__m256i w, __m256i x, __m256i scales) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), scales);
}

// ---- 32-wide block types -------------------------------------------------------------------

// A 32-wide block's integer dot product with the activation block x, as DotCodes' 8 int32 lanes.
// Q8_0's signed codes go through DotCodes; the other types' stored codes are unsigned (0..15,
// 0..31) and enter vpmaddubsw as they are (Q4_0 / Q4_1's nibbles split in ymm: low nibbles values
// 0..15, high 16..31), so Q4_0 / Q5_0's offset is left to the caller: sum (q - o) x = sum q x -
// o sum x.
template <class Block>
PROCTOR_AVX2_TARGET inline __m256i BlockDot(const uint8_t* block, __m256i x) {
  if constexpr (std::is_same_v<Block, Q8_0Block>) {
    return DotCodes(Load32(block + 2), x);
  } else {
    __m256i codes;
    if constexpr (std::is_same_v<Block, Q4Block<false>> || std::is_same_v<Block, Q4Block<true>>) {
      const __m128i packed = Load16(block + (Block::kHasMin ? 4 : 2));
      codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
                               _mm256_set1_epi8(0x0F));
    } else {
      __m128i lo, hi;
      Block::StoredCodes(block, &lo, &hi);
      codes = _mm256_set_m128i(hi, lo);
    }
    return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, x), _mm256_set1_epi16(1));
  }
}

// The f16 values at byte `at` of the 4 rows' current blocks (rows >= R: 0) as 4 f32 lanes.
template <int R>
PROCTOR_AVX2_TARGET inline __m128 Halves4(const uint8_t* const* blocks, int at) {
  uint16_t h[4] = {0, 0, 0, 0};
  for (int r = 0; r < R; ++r) std::memcpy(&h[r], blocks[r] + at, 2);
  uint64_t packed;
  std::memcpy(&packed, h, 8);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(packed)));
}

// The f16 values at byte `at` of the R rows' blocks b (lanes 0..3) and b + 1 (lanes 4..7), the
// blocks `bytes` apart (rows >= R: 0), as 8 f32 lanes.
template <int R>
PROCTOR_AVX2_TARGET inline __m256 Halves8(const uint8_t* const* blocks, int at, int bytes) {
  alignas(16) uint16_t h[8] = {};
  for (int r = 0; r < R; ++r) {
    std::memcpy(&h[r], blocks[r] + at, 2);
    std::memcpy(&h[4 + r], blocks[r] + bytes + at, 2);
  }
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// Row r's 8 int32 lanes summed in fours by two rounds of vphaddd: its lanes 0..3 into lane r,
// 4..7 into lane r + 4 (rows >= R: 0); exact while a row's lanes sum below 2^31.
template <int R>
PROCTOR_AVX2_TARGET inline __m256i PackRows(const __m256i* lanes) {
  __m256i v[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (int r = 0; r < R; ++r) v[r] = lanes[r];
  return _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
}

// Row r's 8 int32 lanes summed into lane r of one xmm (rows >= R: 0); exact while a row's lanes
// sum below 2^31.
template <int R>
PROCTOR_AVX2_TARGET inline __m128i SumRows(const __m256i* lanes) {
  const __m256i s = PackRows<R>(lanes);
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

// Row r's 4 int32 lanes summed into lane r (rows >= R: 0).
template <int R>
PROCTOR_AVX2_TARGET inline __m128i SumRows(const __m128i* lanes) {
  __m128i v[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                  _mm_setzero_si128()};
  for (int r = 0; r < R; ++r) v[r] = lanes[r];
  return _mm_hadd_epi32(_mm_hadd_epi32(v[0], v[1]), _mm_hadd_epi32(v[2], v[3]));
}

// The R outputs in lanes 0..R-1 of v.
template <int R>
PROCTOR_AVX2_TARGET inline void StoreRows(__m128 v, float* out) {
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, v);
  for (int r = 0; r < R; ++r) out[r] = lanes[r];
}

// Row r's second chain (lane r of *min_acc): m (the block minimum, or d_w for Q4_0 / Q5_0) times
// MinTermFactor of sum(x^). Nothing for Q8_0.
template <class Block>
PROCTOR_AVX2_TARGET inline void MinStep(__m128 m, float sum32, __m128* min_acc) {
  if constexpr (kHasMinTerm<Block>) {
    *min_acc = _mm_fmadd_ps(m, _mm_set1_ps(MinTermFactor<Block>(sum32)), *min_acc);
  }
}

// Blocks [b_begin, b_end) of up to 4 rows, continuing each row's two chains (lane r of *acc and
// *min_acc): each row's 8 int32 lanes of a block are summed exactly into lane r, then
// acc += isum * (d_w d_x) for the 4 rows at once. Row r's output is acc + min_acc, the chains
// the prefill kernel (matmul_gguf_q8_avx2.cc) runs too, so both give the same bits.
template <class Block, int R>
PROCTOR_AVX2_TARGET void Rows32Steps(const Inputs& in, const uint8_t* const* rows, int64_t b_begin,
                                     int64_t b_end, __m128* acc, __m128* min_acc) {
  static_assert(R <= 4);
  const uint8_t* blocks[4] = {};
  for (int64_t b = b_begin; b < b_end; ++b) {
    const __m256i x = Load32(in.codes + 32 * b);
    in.prefetch.Advance(b + 1);
    __m256i isum[R];
    for (int r = 0; r < R; ++r) {
      blocks[r] = rows[r] + b * Block::kBytes;
      isum[r] = BlockDot<Block>(blocks[r], x);
    }
    const __m128 d_w = Halves4<R>(blocks, 0);
    *acc = _mm_fmadd_ps(_mm_cvtepi32_ps(SumRows<R>(isum)),
                        _mm_mul_ps(d_w, _mm_set1_ps(in.scale[b])), *acc);
    if constexpr (Block::kHasMin) {
      MinStep<Block>(Halves4<R>(blocks, Block::kMinAt), in.sum32[b], min_acc);
    } else {
      MinStep<Block>(d_w, in.sum32[b], min_acc);
    }
  }
}

template <class Block, int R>
PROCTOR_AVX2_TARGET void Rows32(const Inputs& in, const uint8_t* const* rows, float* out) {
  __m128 acc = _mm_setzero_ps(), min_acc = _mm_setzero_ps();
  Rows32Steps<Block, R>(in, rows, 0, in.n_blocks, &acc, &min_acc);
  StoreRows<R>(_mm_add_ps(acc, min_acc), out);
}

// Q4_0 / Q4_1 two blocks at a time: one 32-byte load holds the nibbles of both (the row's blocks
// b and b + 1 in the two 128-bit lanes), so splitting them gives block b's values 0..15 and
// b + 1's in one ymm and their values 16..31 in another, which meet the activations in
// PairCodes' order. The two vpmaddubsw results add in int16 (pair sums at most 2 * 15 * 127, so
// their sum stays below 2^15) and one vpmaddwd leaves block b in lanes 0..3 and b + 1 in 4..7;
// two rounds of vphaddd then put row r's block b in lane r and its block b + 1 in lane 4 + r,
// against 8 weight scales loaded at once. The chains take block b, then b + 1 (Rows32Steps'
// chains); an odd last block runs Rows32Steps.
template <class Block, int R>
PROCTOR_AVX2_TARGET void RowsQ4Pairs(const Inputs& in, const uint8_t* const* rows, float* out) {
  static_assert(R <= 4);
  constexpr int kQs = Block::kHasMin ? 4 : 2;
  constexpr int kBytes = Block::kBytes;
  __m128 acc = _mm_setzero_ps(), min_acc = _mm_setzero_ps();  // lane r: row r
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const uint8_t* blocks[4] = {};
  const int64_t pairs = in.n_blocks / 2;
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t b = 2 * p;
    const __m256i x_lo = Load32(in.pair_codes + 64 * p), x_hi = Load32(in.pair_codes + 64 * p + 32);
    in.prefetch.Advance(b + 2);
    __m256i isum[R];
    for (int r = 0; r < R; ++r) {
      blocks[r] = rows[r] + b * kBytes;
      const __m256i packed =
          _mm256_set_m128i(Load16(blocks[r] + kBytes + kQs), Load16(blocks[r] + kQs));
      const __m256i lo = _mm256_and_si256(packed, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
      const __m256i pair_sums =
          _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
      isum[r] = _mm256_madd_epi16(pair_sums, ones);
    }
    const __m256 sums = _mm256_cvtepi32_ps(PackRows<R>(isum));
    const __m256 d_w = Halves8<R>(blocks, 0, kBytes);
    const __m256 d_x = _mm256_set_m128(_mm_set1_ps(in.scale[b + 1]), _mm_set1_ps(in.scale[b]));
    const __m256 d = _mm256_mul_ps(d_w, d_x);
    acc = _mm_fmadd_ps(_mm256_castps256_ps128(sums), _mm256_castps256_ps128(d), acc);
    acc = _mm_fmadd_ps(_mm256_extractf128_ps(sums, 1), _mm256_extractf128_ps(d, 1), acc);
    __m256 m = d_w;
    if constexpr (Block::kHasMin) m = Halves8<R>(blocks, Block::kMinAt, kBytes);
    MinStep<Block>(_mm256_castps256_ps128(m), in.sum32[b], &min_acc);
    MinStep<Block>(_mm256_extractf128_ps(m, 1), in.sum32[b + 1], &min_acc);
  }
  in.prefetch.Advance(in.n_blocks);
  Rows32Steps<Block, R>(in, rows, 2 * pairs, in.n_blocks, &acc, &min_acc);
  StoreRows<R>(_mm_add_ps(acc, min_acc), out);
}

// PairCodes' order of x's codes for RowsQ4Pairs (the K / 64 whole pairs of blocks).
PROCTOR_AVX2_TARGET void PairCodes(const int8_t* codes, int64_t K, int8_t* pairs) {
  for (int64_t p = 0; p < K / 64; ++p) {
    const __m256i even = Load32(codes + 64 * p), odd = Load32(codes + 64 * p + 32);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs + 64 * p),
                        _mm256_permute2x128_si256(even, odd, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs + 64 * p + 32),
                        _mm256_permute2x128_si256(even, odd, 0x31));
  }
}

// ---- Q4_K, Q5_K, Q6_K: integer super-block sums, four rows scaled at once ------------------

// Each row's super-block is summed exactly in int32 (its sub-block scales multiply the pair sums
// in vpmaddwd; the codes' minimum or offset enters through the activations' integer code sums),
// then the rows' sums meet in one xmm and are scaled by the rows' d times d_x (Q8_K has one d_x
// per super-block) at once.

// The 16 int16 lanes all equal to int16 lane k (0..7) of a 128-bit lane: _mm256_shuffle_epi8
// masks, one per k (bytes 2k, 2k + 1 repeated).
struct alignas(32) PickWordMasks {
  uint8_t bytes[8][32];
  constexpr PickWordMasks() : bytes() {
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 32; ++i) bytes[k][i] = static_cast<uint8_t>(2 * k + (i & 1));
    }
  }
};
inline constexpr PickWordMasks kPickWord;

// For Q6_K's 16-value groups: the low 128-bit lane all int16 lane 2k, the high one all 2k + 1
// (k = 0..3: the two groups of a 32-value slice).
struct alignas(32) PickWordPairMasks {
  uint8_t bytes[4][32];
  constexpr PickWordPairMasks() : bytes() {
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 32; ++i) {
        bytes[k][i] = static_cast<uint8_t>(2 * (2 * k + (i >= 16 ? 1 : 0)) + (i & 1));
      }
    }
  }
};
inline constexpr PickWordPairMasks kPickWordPair;

PROCTOR_AVX2_TARGET inline __m256i Mask(const uint8_t* bytes) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes));
}

// Q4_K (kFifthBit false, 144-byte blocks: d, dmin, 12 scale bytes, qs[128]) and Q5_K (176 bytes:
// qh[32] before qs). Chunk c holds sub-blocks 2c (low nibbles of qs[32c..32c+32)) and 2c + 1 (high
// nibbles); Q5_K adds bit 2c / 2c + 1 of qh[l] as 16. Sub-block j's 6-bit scale multiplies its
// pair sums in vpmaddwd; the minimum enters as dmin d_x sum_j m_j (code sum of sub-block j),
// the m_j times the code sums in one vpmaddwd.
template <bool kFifthBit, int R>
PROCTOR_AVX2_TARGET void RowsQ45_K(const Inputs& in, const uint8_t* const* rows, float* out) {
  constexpr int kBytes = kFifthBit ? 176 : 144;
  __m128 acc = _mm_setzero_ps(), min_acc = _mm_setzero_ps();  // lane r: row r
  const uint8_t* blocks[4] = {};
  for (int64_t sb = 0; sb < in.n_blocks; ++sb) {
    in.prefetch.Advance(sb + 1);
    const int8_t* x = in.codes + 256 * sb;
    const __m128i x_sums =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.code_sum32 + 8 * sb));
    __m256i sb_sum[R];
    __m128i min_dot[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = blocks[r] = rows[r] + sb * kBytes;
      __m128i sc, m;
      UnpackK4(block + 4, &sc, &m);
      // m_j <= 63 and |code sum| <= 4064: each pair sum below 2^19.
      min_dot[r] = _mm_madd_epi16(_mm_cvtepu8_epi16(m), x_sums);
      const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc));
      __m256i sum = _mm256_setzero_si256();
      for (int c = 0; c < 4; ++c) {
        __m256i lo, hi;
        Q45_KCodes<kFifthBit>(block, c, &lo, &hi);
        const __m256i s_lo = _mm256_shuffle_epi8(scales16, Mask(kPickWord.bytes[2 * c]));
        const __m256i s_hi = _mm256_shuffle_epi8(scales16, Mask(kPickWord.bytes[2 * c + 1]));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(DotScaled(lo, Load32(x + 64 * c), s_lo),
                                                     DotScaled(hi, Load32(x + 64 * c + 32), s_hi)));
      }
      // Per lane at most 4 chunks x 2 x 2 pairs x 31 x 127 x 63 < 2^26.
      sb_sum[r] = sum;
    }
    const __m128 d_x = _mm_set1_ps(in.scale[8 * sb]);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(SumRows<R>(sb_sum)), _mm_mul_ps(Halves4<R>(blocks, 0), d_x),
                       acc);
    min_acc = _mm_fmadd_ps(_mm_cvtepi32_ps(SumRows<R>(min_dot)),
                           _mm_mul_ps(Halves4<R>(blocks, 2), d_x), min_acc);
  }
  StoreRows<R>(_mm_sub_ps(acc, min_acc), out);
}

// Q2_K, Q3_K, Q6_K (matvec_gguf_avx2_codes.h's Groups formats): 16 groups of 16 values, each
// with its own integer scale. The codes enter unsigned; group g's scale multiplies its pair sums
// in vpmaddwd and the super-block's sum stays in int32. Q3_K's and Q6_K's offset o (4, 32)
// starts that sum at -o sum_g scale_g (code sum of group g); Q2_K's minimums make a second int32
// sum M = sum_g min_g (code sum of g). Then acc += S (d d_x) and min_acc += M (dmin d_x) for four
// rows at once; out acc - min_acc (Q2_K) or acc.
template <class Format, int R>
PROCTOR_AVX2_TARGET void RowsGroups16(const Inputs& in, const uint8_t* const* rows, float* out) {
  constexpr int kShift = kOffsetShift<Format>;
  __m128 acc = _mm_setzero_ps(), min_acc = _mm_setzero_ps();  // lane r: row r
  const uint8_t* blocks[4] = {};
  for (int64_t sb = 0; sb < in.n_blocks; ++sb) {
    in.prefetch.Advance(sb + 1);
    const int8_t* x = in.codes + 256 * sb;
    const __m256i x_sums = Load32(in.code_sum16 + 16 * sb);
    __m256i sb_sum[R], min_dot[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = blocks[r] = rows[r] + sb * Format::kBytes;
      const __m128i sc = Format::Scales(block);
      // |scale| <= 128 and |code sum| <= 2032: each pair sum below 2^19, times 32 below 2^24.
      __m256i sum = _mm256_setzero_si256();
      if constexpr (Format::kHasMin) {
        min_dot[r] = _mm256_madd_epi16(_mm256_cvtepu8_epi16(Format::Mins(block)), x_sums);
      } else {
        sum = _mm256_sub_epi32(
            sum, _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc), x_sums), kShift));
      }
      const __m256i scales16[2] = {
          _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc)),
          _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(sc, 8)))};
      for (int j = 0; j < 8; ++j) {  // 32-value slice j: groups 2j, 2j + 1
        const __m256i scales =
            _mm256_shuffle_epi8(scales16[j / 4], Mask(kPickWordPair.bytes[j % 4]));
        sum = _mm256_add_epi32(sum, DotScaled(Format::Slice(block, j), Load32(x + 32 * j), scales));
      }
      // Per lane at most 8 slices x 2 pairs x 63 x 127 x 128 < 2^26, plus the offset's < 2^24.
      sb_sum[r] = sum;
    }
    const __m128 d_x = _mm_set1_ps(in.scale[8 * sb]);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(SumRows<R>(sb_sum)),
                       _mm_mul_ps(Halves4<R>(blocks, Format::kD), d_x), acc);
    if constexpr (Format::kHasMin) {
      min_acc = _mm_fmadd_ps(_mm_cvtepi32_ps(SumRows<R>(min_dot)),
                             _mm_mul_ps(Halves4<R>(blocks, Format::kDmin), d_x), min_acc);
    }
  }
  StoreRows<R>(_mm_sub_ps(acc, min_acc), out);
}

// ---- dispatch --------------------------------------------------------------------------------

template <int R>
PROCTOR_AVX2_TARGET void RunRows(DType type, const Inputs& in, const uint8_t* const* rows,
                                 float* out) {
  switch (type) {
    case DType::kQ8_0:
      return Rows32<Q8_0Block, R>(in, rows, out);
    case DType::kQ4_0:
      return RowsQ4Pairs<Q4Block<false>, R>(in, rows, out);
    case DType::kQ4_1:
      return RowsQ4Pairs<Q4Block<true>, R>(in, rows, out);
    case DType::kQ5_0:
      return Rows32<Q5Block<false>, R>(in, rows, out);
    case DType::kQ5_1:
      return Rows32<Q5Block<true>, R>(in, rows, out);
    case DType::kQ2_K:
      return RowsGroups16<Q2_KGroups, R>(in, rows, out);
    case DType::kQ3_K:
      return RowsGroups16<Q3_KGroups, R>(in, rows, out);
    case DType::kQ4_K:
      return RowsQ45_K<false, R>(in, rows, out);
    case DType::kQ5_K:
      return RowsQ45_K<true, R>(in, rows, out);
    case DType::kQ6_K:
      return RowsGroups16<Q6_KGroups, R>(in, rows, out);
    default:
      CHECK_MSG(false, "no 8-bit-activation matvec for {}", Name(type));
  }
}

}  // namespace

void MatVecGgufQ8Avx2(const ActivationsQ8& x, const MatView& w, float* out, int64_t n_begin,
                      int64_t n_end) {
  CHECK(FusedGgufMatVecCovers(w.type) && CpuFeatures::Host().avx2_fma);
  CHECK_MSG(static_cast<int64_t>(x.codes.size()) == w.cols, "{} activation codes for rows of {}",
            x.codes.size(), w.cols);
  CHECK_MSG(x.blocks == Q8BlocksFor(w.type), "{} weights need the activations of Q8BlocksFor",
            Name(w.type));
  thread_local std::vector<int8_t> pair_codes;
  if (w.type == DType::kQ4_0 || w.type == DType::kQ4_1) {
    pair_codes.resize(x.codes.size());
    PairCodes(x.codes.data(), w.cols, pair_codes.data());
  }
  Inputs in{x.codes.data(),
            pair_codes.data(),
            x.scale.data(),
            x.sum32.data(),
            x.code_sum16.data(),
            x.code_sum32.data(),
            w.cols / static_cast<int64_t>(Info(w.type).block_elems),
            {}};
  WalkRowPasses(w, out, n_begin, n_end, in,
                [&]<int R>(const Inputs& inputs, const uint8_t* const* row_ptrs, float* row_out) {
                  RunRows<R>(w.type, inputs, row_ptrs, row_out);
                });
}

}  // namespace proctor::ops::internal
