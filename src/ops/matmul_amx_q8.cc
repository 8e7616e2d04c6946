// AMX-INT8 MatMul for GGUF block weights on 8-bit activations (ComputeMode::kQ8, prefill T >= 2).
// The weights' integer codes meet the tokens' activation codes (activations_q8.h) in AMX int8
// tiles, which sum each product exactly in int32; the sums are then combined in each output's
// chains exactly as the matrix-vector kernel (matvec_gguf_q8_avx2.cc) combines them, so a token's
// outputs are the bits its decode gives:
//  - 32-wide types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): one tile product per block, then
//    acc += isum_b (d_w d_x) and min_acc += m_b f_b (f_b = MinTermFactor of the block's sum of x^;
//    m_b the block minimum, or d_w for Q4_0 / Q5_0), output acc + min_acc.
//    The stored codes enter unsigned (tdpbusd: weights unsigned, activations signed), Q8_0's
//    signed (tdpbssd), as the matrix-vector kernel sums them. Tiles: C 0-3, 16 weights x 16
//    tokens, C[2i + j] = A[i] x B[j]; A 4-5, 16 weight rows x 32 codes; B 6-7, 8 rows of 16
//    tokens x 4 codes.
//  - K-quants: each value's code times its sub-block (Q4_K, Q5_K) or group (Q2_K, Q3_K, Q6_K)
//    scale, P (at most 63 x 128 in magnitude, as int16), is split into its low byte (0..255) and
//    the signed rest, P = 256 hi + lo; the tiles sum lo . x (tdpbusd) and hi . x (tdpbssd) over a
//    whole super-block, so S = sum_j scale_j isum_j = C_lo + 256 C_hi exactly in int32, with no
//    step between sub-blocks. S less -offset sum_g scale_g (code sum of g) for Q3_K / Q6_K, and
//    M = sum_j m_j (code sum of j) for the types with minimums, then acc += S (d d_x),
//    min_acc += M (dmin d_x), output acc - min_acc. Tiles: C 0-1 the low bytes' sums for two
//    token tiles, C 2-3 the high bytes'; A 4 (lo), 5 (hi): 16 weight rows x 64 values; B 6-7,
//    16 rows of 16 tokens x 4 codes. (Q2_K's P fits the low byte: no high tiles.)
// The tokens' codes are interleaved once per call in tiles of 16 (InterleaveQ8Tiles: one B tile
// is 64 contiguous bytes per row). Weights are decoded 16 rows x one chunk (8 blocks, or one
// super-block) at a time, never the whole matrix.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start some results from _mm*_undefined_*() (self-initialised
// variables), which -Wuninitialized reports once they are inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/amx_tiles.h"
#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_avx2_codes.h"
#include "util/error.h"
#include "util/half.h"

#define PROCTOR_AMX_Q8_TARGET \
  __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

namespace proctor::ops::internal {
namespace {

constexpr int64_t kTile = 16;
constexpr int64_t kChunk = 256;      // values per decoded chunk: 8 blocks, or one super-block
constexpr int64_t kPanelTiles = 16;  // weight tiles (of 16 rows) decoded and swept together

// 16 weight rows x one chunk, ready as A tiles, with what the chains need per row.
struct Panel {
  // 32-wide types: [block][weight][k] codes, d_w and the min-chain factor's weight side.
  alignas(64) uint8_t codes[8][kTile][32];
  alignas(64) float d[8][kTile];
  alignas(64) float m[8][kTile];
  // K-quants: each value's code times its sub-block or group scale, P = 256 hi + lo with lo in
  // 0..255 and hi signed, [64-value step][weight][k]; the minimums or scales as int16 pairs for
  // the term against the tokens' code sums; d, dmin.
  alignas(64) uint8_t lo[4][kTile][64];
  alignas(64) int8_t hi[4][kTile][64];
  alignas(64) int32_t pairs[8][kTile];
  alignas(64) float sd[kTile];
  alignas(64) float sdmin[kTile];
};

PROCTOR_AMX_Q8_TARGET inline void Store16(uint8_t* dst, __m128i v) {
  _mm_store_si128(reinterpret_cast<__m128i*>(dst), v);
}

// Values [32 j, 32 j + 32) of panel row r: the unsigned codes times `scales` (16-bit lanes, one
// per value), split into the low byte and the signed rest.
PROCTOR_AMX_Q8_TARGET inline void StoreScaled(__m256i codes, __m512i scales, int j, Panel* p,
                                              int r) {
  const __m512i product = _mm512_mullo_epi16(_mm512_cvtepu8_epi16(codes), scales);
  _mm256_store_si256(reinterpret_cast<__m256i*>(p->lo[j / 2][r] + 32 * (j % 2)),
                     _mm512_cvtepi16_epi8(product));
  _mm256_store_si256(reinterpret_cast<__m256i*>(p->hi[j / 2][r] + 32 * (j % 2)),
                     _mm512_cvtepi16_epi8(_mm512_srai_epi16(product, 8)));
}

// ---- the formats: each decodes one row's chunk into panel row r ------------------------------

// 32-wide blocks: one tile product (32 codes) per block; `blocks` of the chunk (up to 8).
template <class Block>
struct Blocks32 {
  static constexpr bool kSuper = false;
  static constexpr bool kSigned = std::is_same_v<Block, Q8_0Block>;
  static constexpr bool kMinTerm = kHasMinTerm<Block>;
  // The token side of the min chain for a block whose x^ sums to `sum`.
  static float Factor(float sum) { return kMinTerm ? MinTermFactor<Block>(sum) : 0.0f; }
  PROCTOR_AMX_Q8_TARGET static void Decode(const uint8_t* chunk, int blocks, Panel* p, int r) {
    for (int b = 0; b < blocks; ++b) {
      const uint8_t* blk = chunk + b * Block::kBytes;
      p->d[b][r] = F16At(blk);
      if constexpr (Block::kHasMin) {
        p->m[b][r] = F16At(blk + Block::kMinAt);
      } else {
        p->m[b][r] = p->d[b][r];
      }
      __m128i lo, hi;
      if constexpr (kSigned) {
        Block::Codes(blk, &lo, &hi);
      } else {
        Block::StoredCodes(blk, &lo, &hi);
      }
      Store16(p->codes[b][r], lo);
      Store16(p->codes[b][r] + 16, hi);
    }
  }
  static void Clear(Panel* p, int r) {
    for (auto& block : p->codes) std::memset(block[r], 0, sizeof(block[r]));
    for (int b = 0; b < 8; ++b) p->d[b][r] = p->m[b][r] = 0.0f;
  }
};

// What the K-quant formats share: a panel row with nothing in it.
struct SuperBlocks {
  static constexpr bool kSuper = true;
  static void Clear(Panel* p, int r) {
    for (auto& step : p->lo) std::memset(step[r], 0, sizeof(step[r]));
    for (auto& step : p->hi) std::memset(step[r], 0, sizeof(step[r]));
    for (auto& pair : p->pairs) pair[r] = 0;
    p->sd[r] = p->sdmin[r] = 0.0f;
  }
};

// Q4_K / Q5_K (kFifth): one super-block per chunk; sub-block j (values 32j..32j+31) has scale
// sc_j (P <= 31 x 63: hi 0..7) and minimum m_j.
template <bool kFifth>
struct Q45K : SuperBlocks {
  static constexpr bool kHasMin = true;
  static constexpr bool kHi = true;  // P needs its high byte
  static constexpr int kShift = 0;
  static constexpr int kPairs = 4;        // M pairs over the 8 sub-blocks' code sums
  static constexpr int kPairValues = 32;  // values per code sum
  PROCTOR_AMX_Q8_TARGET static void Decode(const uint8_t* blk, int /*blocks*/, Panel* p, int r) {
    p->sd[r] = F16At(blk);
    p->sdmin[r] = F16At(blk + 2);
    __m128i sc, m;
    UnpackK4(blk + 4, &sc, &m);
    alignas(16) uint8_t scales[16], mins[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(scales), sc);
    _mm_store_si128(reinterpret_cast<__m128i*>(mins), m);
    for (int q = 0; q < 8; ++q)
      p->pairs[q][r] = q < 4 ? Int16Pair(mins[2 * q], mins[2 * q + 1]) : 0;
    for (int c = 0; c < 4; ++c) {
      __m256i lo, hi;
      Q45_KCodes<kFifth>(blk, c, &lo, &hi);
      StoreScaled(lo, _mm512_set1_epi16(scales[2 * c]), 2 * c, p, r);
      StoreScaled(hi, _mm512_set1_epi16(scales[2 * c + 1]), 2 * c + 1, p, r);
    }
  }
};

// Q2_K, Q3_K, Q6_K (the Groups formats): one super-block per chunk; group g (values
// 16g..16g+15) has scale sc_g. P: Q2_K's 3 x 15 fits the low byte; Q3_K's 7 x [-32, 31] and
// Q6_K's 63 x [-128, 127] need the high one.
template <class Format>
struct Groups16 : SuperBlocks {
  static constexpr bool kHasMin = Format::kHasMin;
  static constexpr bool kHi = Format::kBits > 2;
  static constexpr int kShift = kOffsetShift<Format>;
  static constexpr int kPairs = 8;        // minimums (Q2_K) or scales (the offset's term) per pair
  static constexpr int kPairValues = 16;  // values per code sum
  PROCTOR_AMX_Q8_TARGET static void Decode(const uint8_t* blk, int /*blocks*/, Panel* p, int r) {
    p->sd[r] = F16At(blk + Format::kD);
    p->sdmin[r] = Format::kHasMin ? F16At(blk + Format::kDmin) : 0.0f;
    alignas(16) int8_t scales[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(scales), Format::Scales(blk));
    alignas(16) uint8_t mins[16] = {};
    if constexpr (Format::kHasMin) {
      _mm_store_si128(reinterpret_cast<__m128i*>(mins), Format::Mins(blk));
    }
    for (int q = 0; q < 8; ++q) {
      p->pairs[q][r] = Format::kHasMin ? Int16Pair(mins[2 * q], mins[2 * q + 1])
                                       : Int16Pair(scales[2 * q], scales[2 * q + 1]);
    }
    for (int j = 0; j < 8; ++j) {
      const __m512i group_scales = _mm512_inserti64x4(_mm512_set1_epi16(scales[2 * j]),
                                                      _mm256_set1_epi16(scales[2 * j + 1]), 1);
      StoreScaled(Format::Slice(blk, j), group_scales, j, p, r);
    }
  }
};

// ---- the token side ---------------------------------------------------------------------------

struct Tokens {
  const int8_t* codes;   // [t_tiles][K / 4][16][4] (InterleaveQ8Tiles, 16-token tiles)
  const float* dx;       // [t_tiles][K / 32][16]: each block's d
  const float* factor;   // [t_tiles][K / 32][16]: MinTermFactor of each block's sum (32-wide)
  const int32_t* pairs;  // [t_tiles][K / 256][8][16]: code sums as int16 pairs (K-quants)
  int64_t K;
};

struct Args {
  Tokens x;
  int64_t T;
  const MatView* w;
  MutMatF32 out;
};

// C tiles 0-3: 16 x 16 int32; A tiles 4-5: 16 rows x `k` codes; B tiles 6-7: k / 4 rows of 16
// tokens x 4 codes.
PROCTOR_AMX_Q8_TARGET void ConfigureTiles(int k) {
  AmxTileConfig config;
  for (int i = 0; i < 4; ++i) config.rows[i] = kTile, config.colsb[i] = 64;
  for (int i = 4; i < 6; ++i) config.rows[i] = kTile, config.colsb[i] = static_cast<uint16_t>(k);
  for (int i = 6; i < 8; ++i) config.rows[i] = static_cast<uint8_t>(k / 4), config.colsb[i] = 64;
  LoadAmxTileConfig(config);
}

// ---- 32-wide blocks: one tile product per block, the chains after each ----------------------

// C tiles 0-3 = A tiles (p0, p1 at block b) x B tiles (token tiles b0, b1), stored to
// c[4][256].
template <class Format>
PROCTOR_AMX_Q8_TARGET inline void BlockProducts(const Panel& p0, const Panel& p1, int b,
                                                const int8_t* b0, const int8_t* b1, int32_t* c) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, p0.codes[b][0], 32);
  _tile_loadd(5, p1.codes[b][0], 32);
  _tile_loadd(6, b0, 64);
  _tile_loadd(7, b1, 64);
  if constexpr (Format::kSigned) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  } else {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, c, 64);
  _tile_stored(1, c + 256, 64);
  _tile_stored(2, c + 512, 64);
  _tile_stored(3, c + 768, 64);
}

// One output tile's chains for block b of panel p: acc += isum (d_w d_x), min_acc += m f.
// acc, min_acc: [16 weights][16 tokens].
template <class Format>
PROCTOR_AMX_Q8_TARGET inline void BlockStep(const Panel& p, int b, const int32_t* c,
                                            const float* dx16, const float* f16, float* acc,
                                            float* min_acc) {
  const __m512 dx = _mm512_loadu_ps(dx16);
  const __m512 f = Format::kMinTerm ? _mm512_loadu_ps(f16) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < kTile; ++i) {
    const __m512 isum = _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * i));
    const __m512 d = _mm512_mul_ps(_mm512_set1_ps(p.d[b][i]), dx);
    _mm512_store_ps(acc + 16 * i, _mm512_fmadd_ps(isum, d, _mm512_load_ps(acc + 16 * i)));
    if constexpr (Format::kMinTerm) {
      _mm512_store_ps(min_acc + 16 * i, _mm512_fmadd_ps(_mm512_set1_ps(p.m[b][i]), f,
                                                        _mm512_load_ps(min_acc + 16 * i)));
    }
  }
}

// Two weight tiles (panels p0, p1) x two token tiles (t0, t1) over the chunk's `blocks` blocks:
// acc[w][t] and min_acc[w][t] continue their chains.
template <class Format>
PROCTOR_AMX_Q8_TARGET void Blocks2x2(const Args& a, const Panel& p0, const Panel& p1, int64_t t0,
                                     int64_t t1, int64_t chunk, int blocks, float* const acc[2][2],
                                     float* const min_acc[2][2]) {
  alignas(64) int32_t c[4 * 256];
  const int64_t K = a.x.K, blocks32 = K / 32;
  const int8_t* x0 = a.x.codes + (t0 * K + chunk * kChunk) * kTile;
  const int8_t* x1 = a.x.codes + (t1 * K + chunk * kChunk) * kTile;
  const Panel* panels[2] = {&p0, &p1};
  const int64_t t_of[2] = {t0, t1};
  for (int b = 0; b < blocks; ++b) {
    BlockProducts<Format>(p0, p1, b, x0 + b * 32 * kTile, x1 + b * 32 * kTile, c);
    for (int wi = 0; wi < 2; ++wi) {
      for (int ti = 0; ti < 2; ++ti) {
        const int64_t at = (t_of[ti] * blocks32 + chunk * 8 + b) * kTile;
        BlockStep<Format>(*panels[wi], b, c + (2 * wi + ti) * 256, a.x.dx + at, a.x.factor + at,
                          acc[wi][ti], min_acc[wi][ti]);
      }
    }
  }
}

// ---- K-quants: the super-block's scaled sums accumulate in the tiles --------------------------

// Row i's integer term sum_q pair_q . code-sum pair_q (exact in int32) for 16 tokens.
template <class Format>
PROCTOR_AMX_Q8_TARGET inline __m512i PairTerm(const Panel& p, int i, const int32_t* cs) {
  __m512i t = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int q = 0; q < Format::kPairs; ++q) {
    t = _mm512_add_epi32(
        t, _mm512_madd_epi16(_mm512_set1_epi32(p.pairs[q][i]), _mm512_loadu_si512(cs + 16 * q)));
  }
  return t;
}

// One weight tile (panel p) x two token tiles (t0, t1) over super-block sb: the tiles sum
// S = sum_k P_k x_k = sum_j scale_j isum_j exactly (C 0-1 the low bytes' products, C 2-3 the high
// bytes', which count 256 times), four 64-value steps each; then S (less Q3_K's / Q6_K's offset
// term) and M continue the chains acc[t], min_acc[t].
template <class Format>
PROCTOR_AMX_Q8_TARGET void SuperBlock1x2(const Args& a, const Panel& p, int64_t t0, int64_t t1,
                                         int64_t sb, float* const acc[2], float* const min_acc[2]) {
  alignas(64) int32_t c[4][256];
  const int64_t K = a.x.K, blocks32 = K / 32, super_blocks = K / 256;
  const int8_t* x0 = a.x.codes + (t0 * K + sb * 256) * kTile;
  const int8_t* x1 = a.x.codes + (t1 * K + sb * 256) * kTile;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int s = 0; s < 4; ++s) {
    _tile_loadd(4, p.lo[s][0], 64);
    _tile_loadd(6, x0 + s * 64 * kTile, 64);
    _tile_loadd(7, x1 + s * 64 * kTile, 64);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    if constexpr (Format::kHi) {
      _tile_loadd(5, p.hi[s][0], 64);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  if constexpr (Format::kHi) {
    _tile_stored(2, c[2], 64);
    _tile_stored(3, c[3], 64);
  }
  const int64_t t_of[2] = {t0, t1};
  for (int ti = 0; ti < 2; ++ti) {
    const int32_t* cs = a.x.pairs + (t_of[ti] * super_blocks + sb) * 8 * kTile;
    const __m512 dx = _mm512_loadu_ps(a.x.dx + (t_of[ti] * blocks32 + 8 * sb) * kTile);
    for (int i = 0; i < kTile; ++i) {
      __m512i S = _mm512_load_si512(c[ti] + 16 * i);
      if constexpr (Format::kHi) {
        S = _mm512_add_epi32(S, _mm512_slli_epi32(_mm512_load_si512(c[2 + ti] + 16 * i), 8));
      }
      if constexpr (!Format::kHasMin) {
        S = _mm512_sub_epi32(S, _mm512_slli_epi32(PairTerm<Format>(p, i, cs), Format::kShift));
      }
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(p.sd[i]), dx);
      float* a_row = acc[ti] + 16 * i;
      _mm512_store_ps(a_row, _mm512_fmadd_ps(_mm512_cvtepi32_ps(S), d, _mm512_load_ps(a_row)));
      if constexpr (Format::kHasMin) {
        const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(p.sdmin[i]), dx);
        float* m_row = min_acc[ti] + 16 * i;
        _mm512_store_ps(m_row, _mm512_fmadd_ps(_mm512_cvtepi32_ps(PairTerm<Format>(p, i, cs)), dmin,
                                               _mm512_load_ps(m_row)));
      }
    }
  }
}

template <class Format>
PROCTOR_AMX_Q8_TARGET void Kernel(const Args& a, int64_t n_begin, int64_t n_end) {
  thread_local std::unique_ptr<Panel[]> panels;  // [kPanelTiles]
  if (!panels) panels = std::make_unique<Panel[]>(kPanelTiles);
  const MatView& w = *a.w;
  const int64_t K = a.x.K;
  const int64_t t_tiles = (a.T + kTile - 1) / kTile;
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  const int64_t chunk_bytes = static_cast<int64_t>(BytesFor(w.type, kChunk));
  // Chains between chunks: [kPanelTiles][t_tiles][acc, min_acc][16 weights][16 tokens], plus a
  // scratch pair for the missing partner of an odd tile count.
  thread_local std::vector<float> chains;
  const size_t tile_floats = static_cast<size_t>(2 * kTile * kTile);
  float* const store =
      AlignedAmxScratch(chains, (static_cast<size_t>(kPanelTiles * t_tiles) + 1) * tile_floats);
  float* const scratch = store + static_cast<size_t>(kPanelTiles * t_tiles) * tile_floats;
  auto chain = [&](int64_t wt, int64_t tt) {
    return store + static_cast<size_t>(wt * t_tiles + tt) * tile_floats;
  };
  ConfigureTiles(Format::kSuper ? 64 : 32);
  for (int64_t nb0 = n_begin; nb0 < n_end; nb0 += kPanelTiles * kTile) {
    const int64_t tiles = std::min(kPanelTiles, (n_end - nb0 + kTile - 1) / kTile);
    std::fill(store, store + static_cast<size_t>(tiles * t_tiles) * tile_floats, 0.0f);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int blocks = static_cast<int>(std::min(kChunk, K - chunk * kChunk) / 32);
      for (int64_t wt = 0; wt < tiles; ++wt) {
        const int64_t n0 = nb0 + wt * kTile;
        for (int r = 0; r < kTile; ++r) {
          if (n0 + r < n_end) {
            Format::Decode(w.Row(n0 + r) + chunk * chunk_bytes, blocks, &panels[wt], r);
          } else {
            Format::Clear(&panels[wt], r);  // padding rows: zero codes and factors
          }
        }
      }
      for (int64_t tt = 0; tt < t_tiles; tt += 2) {
        const bool t_pair = tt + 1 < t_tiles;
        const int64_t t1 = t_pair ? tt + 1 : tt;
        if constexpr (Format::kSuper) {
          for (int64_t wt = 0; wt < tiles; ++wt) {
            float* const c0 = chain(wt, tt);
            float* const c1 = t_pair ? chain(wt, tt + 1) : scratch;
            float* const acc[2] = {c0, c1};
            float* const min_acc[2] = {c0 + 256, c1 + 256};
            SuperBlock1x2<Format>(a, panels[wt], tt, t1, chunk, acc, min_acc);
          }
        } else {
          for (int64_t wt = 0; wt < tiles; wt += 2) {
            const bool w_pair = wt + 1 < tiles;
            float* const c00 = chain(wt, tt);
            float* const c01 = t_pair ? chain(wt, tt + 1) : scratch;
            float* const c10 = w_pair ? chain(wt + 1, tt) : scratch;
            float* const c11 = w_pair && t_pair ? chain(wt + 1, tt + 1) : scratch;
            float* const acc[2][2] = {{c00, c01}, {c10, c11}};
            float* const min_acc[2][2] = {{c00 + 256, c01 + 256}, {c10 + 256, c11 + 256}};
            Blocks2x2<Format>(a, panels[wt], panels[w_pair ? wt + 1 : wt], tt, t1, chunk, blocks,
                              acc, min_acc);
          }
        }
      }
    }
    for (int64_t wt = 0; wt < tiles; ++wt) {  // [weight][token] -> out[token][weight]
      const int64_t n0 = nb0 + wt * kTile, rows = std::min(kTile, n_end - n0);
      for (int64_t t = 0; t < a.T; ++t) {
        const float* acc = chain(wt, t / kTile) + t % kTile;
        const float* min_acc = acc + 256;
        float* o = a.out.Row(t) + n0;
        for (int64_t i = 0; i < rows; ++i) {
          o[i] = Format::kSuper ? acc[16 * i] - min_acc[16 * i] : acc[16 * i] + min_acc[16 * i];
        }
      }
    }
  }
  _tile_release();
}

// Token tiles [tile_begin, tile_end)'s per-block scales, and the 32-wide types' min-chain
// factors or the K-quants' code sums as int16 pairs (tokens past T: zeros).
template <class Format>
void GatherTokenSums(const ActivationsQ8* x, int64_t T, int64_t K, int64_t tile_begin,
                     int64_t tile_end, float* dx, float* factor, int32_t* pairs) {
  const int64_t blocks32 = K / 32;
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    for (int64_t j = 0; j < kTile; ++j) {
      const int64_t t = tile * kTile + j;
      const ActivationsQ8* token = t < T ? &x[t] : nullptr;
      for (int64_t b = 0; b < blocks32; ++b) {
        const int64_t at = (tile * blocks32 + b) * kTile + j;
        dx[at] = token != nullptr ? token->scale[b] : 0.0f;
        if constexpr (!Format::kSuper) {
          factor[at] = Format::Factor(token != nullptr ? token->sum32[b] : 0.0f);
        }
      }
      if constexpr (Format::kSuper) {
        for (int64_t sb = 0; sb < K / 256; ++sb) {
          for (int q = 0; q < 8; ++q) {
            int first = 0, second = 0;
            if (token != nullptr && q < Format::kPairs) {
              const int16_t* sums =
                  Format::kPairValues == 32 ? token->code_sum32.data() : token->code_sum16.data();
              const int64_t at = 256 / Format::kPairValues * sb + 2 * q;
              first = sums[at];
              second = sums[at + 1];
            }
            pairs[((tile * (K / 256) + sb) * 8 + q) * kTile + j] = Int16Pair(first, second);
          }
        }
      }
    }
  }
}

// A type's token-side preparation and kernel.
struct Kernels {
  void (*gather)(const ActivationsQ8*, int64_t, int64_t, int64_t, int64_t, float*, float*,
                 int32_t*) = nullptr;
  void (*run)(const Args&, int64_t, int64_t) = nullptr;
};

template <class Format>
constexpr Kernels KernelsOf() {
  return {GatherTokenSums<Format>, Kernel<Format>};
}

Kernels KernelsFor(DType type) {
  switch (type) {
    case DType::kQ8_0:
      return KernelsOf<Blocks32<Q8_0Block>>();
    case DType::kQ4_0:
      return KernelsOf<Blocks32<Q4Block<false>>>();
    case DType::kQ4_1:
      return KernelsOf<Blocks32<Q4Block<true>>>();
    case DType::kQ5_0:
      return KernelsOf<Blocks32<Q5Block<false>>>();
    case DType::kQ5_1:
      return KernelsOf<Blocks32<Q5Block<true>>>();
    case DType::kQ2_K:
      return KernelsOf<Groups16<Q2_KGroups>>();
    case DType::kQ3_K:
      return KernelsOf<Groups16<Q3_KGroups>>();
    case DType::kQ4_K:
      return KernelsOf<Q45K<false>>();
    case DType::kQ5_K:
      return KernelsOf<Q45K<true>>();
    case DType::kQ6_K:
      return KernelsOf<Groups16<Q6_KGroups>>();
    default:
      return {};
  }
}

}  // namespace

bool AmxQ8Covers(DType type) { return KernelsFor(type).run != nullptr; }

void MatMulAmxQ8(const MatView& x, const MatView& w, MutMatF32 out, ThreadPool& pool) {
  const CpuFeatures& cpu = CpuFeatures::Host();
  CHECK(AmxQ8Covers(w.type) && cpu.amx_int8);
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  CHECK_MSG(K == w.cols && K % static_cast<int64_t>(Info(w.type).block_elems) == 0,
            "x [{}, {}] w [{}, {}]", T, K, N, w.cols);
  const int64_t t_tiles = (T + kTile - 1) / kTile;
  const DType type = w.type;
  const Kernels kernels = KernelsFor(type);
  // The caller's buffers (a worker naming them would get its own): workers use the pointers.
  thread_local std::vector<ActivationsQ8> tokens_storage;
  thread_local std::vector<int8_t> codes_storage;
  thread_local std::vector<float> dx_storage, factor_storage;
  thread_local std::vector<int32_t> pairs_storage;
  if (tokens_storage.size() < static_cast<size_t>(T)) tokens_storage.resize(static_cast<size_t>(T));
  codes_storage.resize(static_cast<size_t>(t_tiles * kTile * K));
  dx_storage.resize(static_cast<size_t>(t_tiles * kTile * (K / 32)));
  factor_storage.resize(dx_storage.size());
  pairs_storage.resize(static_cast<size_t>(t_tiles * kTile * 8 * (K / 256)));
  ActivationsQ8* const tokens = tokens_storage.data();
  int8_t* const codes = codes_storage.data();
  float* const dx = dx_storage.data();
  float* const factor = factor_storage.data();
  int32_t* const pairs = pairs_storage.data();
  pool.ParallelFor(static_cast<size_t>(t_tiles), [&](size_t begin, size_t end, int) {
    const auto tile_begin = static_cast<int64_t>(begin), tile_end = static_cast<int64_t>(end);
    for (int64_t t = tile_begin * kTile; t < std::min(T, tile_end * kTile); ++t) {
      tokens[t].Quantize(x.RowAs<float>(t), K, Q8BlocksFor(type));
    }
    InterleaveQ8Tiles(tokens, T, K, kTile, tile_begin, tile_end, codes);
    kernels.gather(tokens, T, K, tile_begin, tile_end, dx, factor, pairs);
  });
  const Args args{{codes, dx, factor, pairs, K}, T, &w, out};
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(kTile),
                        [&](size_t begin, size_t end, int) {
                          kernels.run(args, static_cast<int64_t>(begin), static_cast<int64_t>(end));
                        });
}

}  // namespace proctor::ops::internal
