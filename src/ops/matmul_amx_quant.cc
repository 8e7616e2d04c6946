// AMX MatMul for GGUF block-quantized weights (prefill, T >= 2) with the weights kept exact.
//
// Every supported type is written per 32-wide k block as
//     w[n][k] = scale[n][g] * code[n][k] - offset[n][g]        (g: the block's scale group)
// with small integer codes that bf16 represents exactly: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the
// 32-wide sub-blocks of Q4_K / Q5_K (scale d * sc, offset dmin * m), and Q3_K's code times its
// 6-bit sub-scale (|product| <= 128; one scale d per 256 values), and Q6_K's code times its int8
// sub-scale split exactly into two bf16 parts (two A tiles). Then
//     out[t][n] = sum_g scale[n][g] * (Codes_g · X_g)[n][t] - offset[n][g] * xsum_g[t]
// The products Codes_g · X_g run on AMX tiles with x as bf16 (bf16 mode: rounded, one part; f32
// mode: split exactly into hi + mid + lo, three parts accumulated in the same tile), so every
// product is exact in f32 and the tile sums in f32. After each scale group the tile is stored
// and AVX-512 FMAs apply the scales (and offsets with xsum_g, the f32 sum of x over the group).
// Tiles: A = codes of 16 weights x 32 k (bf16, decoded per panel), B = x as 16 k-pairs x 16
// tokens (PackTokensVnni), C = 16 weights x 16 tokens.
//
// Weights are decoded 16 rows x kChunkBlocks blocks at a time into a small panel with SIMD
// (nibbles -> bf16 through a vpermw table), never the whole matrix. Each output is one fixed
// chain over k, independent of thread partitions.
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
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/matmul_kernels.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

#define PROCTOR_AMXQ_TARGET                                                     \
  __attribute__((                                                               \
      target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16," \
             "fma,f16c")))

namespace proctor::ops::internal {
namespace {

constexpr int64_t kTile = 16;
constexpr int64_t kChunkBlocks = 8;  // 32-wide blocks per decoded panel (256 k)
constexpr int64_t kPanelTiles = 16;  // weight tiles (of 16 rows) decoded and swept together

// 16 weight rows x up to kChunkBlocks blocks, ready as A tiles.
struct Panel {
  alignas(64) uint16_t codes[kChunkBlocks][kTile][32];     // [block][weight][k]: bf16 codes
  alignas(64) uint16_t codes_lo[kChunkBlocks][kTile][32];  // second part (Q6_K) or unused
  alignas(64) float scale[kChunkBlocks][kTile];            // [group][weight]
  alignas(64) float offset[kChunkBlocks][kTile];           // [group][weight]
};

// Decodes row `row`, blocks [b0, b0 + nb), into panel row r (codes, and scale / offset per
// group). K-quants: b0 and nb are multiples of 8.
using RowDecoder = void (*)(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p, int r);

struct QuantLayout {
  RowDecoder decode;  // nullptr: type not supported
  int group_blocks;   // consecutive 32-blocks sharing a scale
  bool has_offset;
  int weight_parts;  // 2: codes need two bf16 parts (codes + codes_lo), else 1
};

// bf16 bits of first, first + 1, ..., first + 31 (a vpermw lookup table of small integers).
PROCTOR_AMXQ_TARGET inline __m512i IntTable(float first) {
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 lo = _mm512_add_ps(iota, _mm512_set1_ps(first));
  const __m512 hi = _mm512_add_ps(lo, _mm512_set1_ps(16.0f));
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// 16 bf16 -> f32 (exact).
PROCTOR_AMXQ_TARGET inline __m512 Bf16ToF32(__m256bh h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
}

// 32 int16 lanes (small integers) -> bf16 bits.
PROCTOR_AMXQ_TARGET inline __m512i Int16ToBf16(__m512i v) {
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(v)));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(v, 1)));
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

PROCTOR_AMXQ_TARGET inline void Store32(uint16_t* dst, __m512i v) {
  _mm512_store_si512(reinterpret_cast<__m512i*>(dst), v);
}

// 16 bytes -> 32 word indices: [low nibbles of bytes 0..15 | high nibbles of bytes 0..15].
PROCTOR_AMXQ_TARGET inline __m512i NibbleIndices(const uint8_t* qs) {
  const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(w, _mm256_set1_epi16(15))),
                            _mm256_srli_epi16(w, 4), 1);
}

PROCTOR_AMXQ_TARGET void DecodeQ8_0(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p,
                                    int r) {
  const uint8_t* blocks = w.Row(row) + b0 * 34;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * 34;
    p->scale[b][r] = F16At(blk);
    const __m512i q =
        _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)));
    Store32(p->codes[b][r], Int16ToBf16(q));
  }
}

// Q4_0 (codes q - 8) and Q4_1 (codes q, offset -m).
template <bool kMin>
PROCTOR_AMXQ_TARGET void DecodeQ4(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p,
                                  int r) {
  constexpr int kBytes = kMin ? 20 : 18;
  const __m512i table = IntTable(kMin ? 0.0f : -8.0f);
  const uint8_t* blocks = w.Row(row) + b0 * kBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * kBytes;
    p->scale[b][r] = F16At(blk);
    if (kMin) p->offset[b][r] = -F16At(blk + 2);
    Store32(p->codes[b][r], _mm512_permutexvar_epi16(NibbleIndices(blk + (kMin ? 4 : 2)), table));
  }
}

// Q5_0 (codes q - 16) and Q5_1 (codes q, offset -m): q = nibble | (bit j of qh) << 4.
template <bool kMin>
PROCTOR_AMXQ_TARGET void DecodeQ5(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p,
                                  int r) {
  constexpr int kBytes = kMin ? 24 : 22;
  constexpr int kQh = kMin ? 4 : 2;
  const __m512i table = IntTable(kMin ? 0.0f : -16.0f);
  const uint8_t* blocks = w.Row(row) + b0 * kBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * kBytes;
    uint32_t qh;
    std::memcpy(&qh, blk + kQh, 4);
    p->scale[b][r] = F16At(blk);
    if (kMin) p->offset[b][r] = -F16At(blk + 2);
    __m512i idx = NibbleIndices(blk + kQh + 4);
    idx = _mm512_mask_add_epi16(idx, static_cast<__mmask32>(qh), idx, _mm512_set1_epi16(16));
    Store32(p->codes[b][r], _mm512_permutexvar_epi16(idx, table));
  }
}

// The 8 six-bit (scale, min) pairs of a Q4_K / Q5_K super-block (ggml's get_scale_min_k4).
inline void UnpackK4(const uint8_t* packed, uint8_t* sc, uint8_t* m) {
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint32_t s[2] = {w[0] & 0x3F3F3F3Fu,
                         (w[2] & 0x0F0F0F0Fu) | (((w[0] >> 6) & 0x03030303u) << 4)};
  const uint32_t n[2] = {w[1] & 0x3F3F3F3Fu,
                         ((w[2] >> 4) & 0x0F0F0F0Fu) | (((w[1] >> 6) & 0x03030303u) << 4)};
  std::memcpy(sc, s, 8);
  std::memcpy(m, n, 8);
}

// Q4_K / Q5_K: sub-block j of a super-block is block 8s + j: codes 0..15 (0..31), scale d * sc_j,
// offset dmin * m_j.
template <bool kFive>
PROCTOR_AMXQ_TARGET void DecodeQ45_K(const MatView& w, int64_t row, int64_t b0, int64_t nb,
                                     Panel* p, int r) {
  constexpr int kBytes = kFive ? 176 : 144;
  const __m512i table = IntTable(0.0f);
  const __m512i low4 = _mm512_set1_epi16(15), bit0 = _mm512_set1_epi16(1);
  const uint8_t* sbs = w.Row(row) + (b0 / 8) * kBytes;
  for (int64_t s = 0; s < nb / 8; ++s) {
    const uint8_t* blk = sbs + s * kBytes;
    const float d = F16At(blk), dmin = F16At(blk + 2);
    uint8_t sc[8], m[8];
    UnpackK4(blk + 4, sc, m);
    for (int j = 0; j < 8; ++j) {
      p->scale[8 * s + j][r] = d * static_cast<float>(sc[j]);
      p->offset[8 * s + j][r] = dmin * static_cast<float>(m[j]);
    }
    const __m512i qh =
        kFive ? _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)))
              : _mm512_setzero_si512();
    const uint8_t* qs = blk + (kFive ? 48 : 16);
    for (int c = 0; c < 4; ++c) {  // 32 bytes: low nibbles = sub-block 2c, high = 2c + 1
      const __m512i bytes =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c)));
      __m512i lo = _mm512_and_si512(bytes, low4), hi = _mm512_srli_epi16(bytes, 4);
      if (kFive) {
        const __m128i s_lo = _mm_cvtsi32_si128(2 * c), s_hi = _mm_cvtsi32_si128(2 * c + 1);
        lo = _mm512_or_si512(
            lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(qh, s_lo), bit0), 4));
        hi = _mm512_or_si512(
            hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(qh, s_hi), bit0), 4));
      }
      Store32(p->codes[8 * s + 2 * c][r], _mm512_permutexvar_epi16(lo, table));
      Store32(p->codes[8 * s + 2 * c + 1][r], _mm512_permutexvar_epi16(hi, table));
    }
  }
}

// Q3_K: code (low2 + 4 * high - 4) times the signed 6-bit sub-scale of its 16 values (|product|
// <= 128, exact in bf16); scale d for the whole super-block (8 blocks), no offset.
PROCTOR_AMXQ_TARGET void DecodeQ3_K(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p,
                                    int r) {
  const uint8_t* sbs = w.Row(row) + (b0 / 8) * 110;
  const __m512i low2 = _mm512_set1_epi16(3), bit0 = _mm512_set1_epi16(1);
  const __m512i four = _mm512_set1_epi16(4);
  int8_t sub[16];
  for (int64_t s = 0; s < nb / 8; ++s) {
    const uint8_t* blk = sbs + s * 110;
    quant::UnpackQ3_KScales(blk + 96, sub);
    p->scale[s][r] = F16At(blk + 108);
    const __m512i hmask =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int h = 0; h < 2; ++h) {
      const __m512i qs = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * h)));
      for (int j = 0; j < 4; ++j) {  // values 128h + 32j + l, l = 0..31
        const __m512i low = _mm512_and_si512(_mm512_srl_epi16(qs, _mm_cvtsi32_si128(2 * j)), low2);
        const __m512i high =
            _mm512_and_si512(_mm512_srl_epi16(hmask, _mm_cvtsi32_si128(4 * h + j)), bit0);
        const __m512i code =
            _mm512_sub_epi16(_mm512_or_si512(low, _mm512_slli_epi16(high, 2)), four);
        const int16_t s0 = sub[8 * h + 2 * j], s1 = sub[8 * h + 2 * j + 1];
        const __m512i scales = _mm512_inserti64x4(_mm512_set1_epi16(s0), _mm256_set1_epi16(s1), 1);
        Store32(p->codes[8 * s + 4 * h + j][r], Int16ToBf16(_mm512_mullo_epi16(code, scales)));
      }
    }
  }
}

// Q6_K: code (q - 32) times its int8 sub-scale (16 values each): up to 13 significant bits, so
// each product is split exactly into two bf16 parts (codes = nearest bf16, codes_lo = the rest,
// at most 5 bits); scale d for the whole super-block (8 blocks), no offset.
PROCTOR_AMXQ_TARGET void DecodeQ6_K(const MatView& w, int64_t row, int64_t b0, int64_t nb, Panel* p,
                                    int r) {
  const uint8_t* sbs = w.Row(row) + (b0 / 8) * 210;
  const __m512i low4 = _mm512_set1_epi16(15), low2 = _mm512_set1_epi16(3);
  const __m512i bias = _mm512_set1_epi16(32);
  for (int64_t s = 0; s < nb / 8; ++s) {
    const uint8_t* blk = sbs + s * 210;
    p->scale[s][r] = F16At(blk + 208);
    for (int h = 0; h < 2; ++h) {
      const __m512i qh = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h)));
      for (int i = 0; i < 4; ++i) {  // values 128h + 32i + l, l = 0..31
        const __m512i ql = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (i & 1))));
        const __m512i nib =
            _mm512_and_si512(_mm512_srl_epi16(ql, _mm_cvtsi32_si128(4 * (i >> 1))), low4);
        const __m512i high = _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(2 * i)), low2);
        const __m512i code =
            _mm512_sub_epi16(_mm512_or_si512(nib, _mm512_slli_epi16(high, 4)), bias);
        const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h + 2 * i);
        const __m512i scales =
            _mm512_inserti64x4(_mm512_set1_epi16(sc[0]), _mm256_set1_epi16(sc[1]), 1);
        const __m512i prod = _mm512_mullo_epi16(code, scales);
        const __m512 f0 = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(prod)));
        const __m512 f1 =
            _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(prod, 1)));
        const __m256bh h0 = _mm512_cvtneps_pbh(f0), h1 = _mm512_cvtneps_pbh(f1);
        const __m256bh l0 = _mm512_cvtneps_pbh(_mm512_sub_ps(f0, Bf16ToF32(h0)));
        const __m256bh l1 = _mm512_cvtneps_pbh(_mm512_sub_ps(f1, Bf16ToF32(h1)));
        const int64_t b = 8 * s + 4 * h + i;
        Store32(p->codes[b][r],
                _mm512_inserti64x4(_mm512_castsi256_si512((__m256i)h0), (__m256i)h1, 1));
        Store32(p->codes_lo[b][r],
                _mm512_inserti64x4(_mm512_castsi256_si512((__m256i)l0), (__m256i)l1, 1));
      }
    }
  }
}

QuantLayout LayoutOf(DType type) {
  switch (type) {
    case DType::kQ8_0:
      return {DecodeQ8_0, 1, false, 1};
    case DType::kQ4_0:
      return {DecodeQ4<false>, 1, false, 1};
    case DType::kQ4_1:
      return {DecodeQ4<true>, 1, true, 1};
    case DType::kQ5_0:
      return {DecodeQ5<false>, 1, false, 1};
    case DType::kQ5_1:
      return {DecodeQ5<true>, 1, true, 1};
    case DType::kQ4_K:
      return {DecodeQ45_K<false>, 1, true, 1};
    case DType::kQ5_K:
      return {DecodeQ45_K<true>, 1, true, 1};
    case DType::kQ3_K:
      return {DecodeQ3_K, 8, false, 1};
    case DType::kQ6_K:
      return {DecodeQ6_K, 8, false, 2};
    default:  // Q2_K (its minimums change every 16 values): the FMA kernels
      return {nullptr, 1, false, 1};
  }
}

PROCTOR_AMXQ_TARGET void BuildPanel(const QuantLayout& layout, const MatView& w, int64_t n0,
                                    int64_t rows, int64_t b0, int64_t nb, Panel* p) {
  const int64_t groups = nb / layout.group_blocks;
  for (int r = 0; r < kTile; ++r) {
    if (r < rows) {
      layout.decode(w, n0 + r, b0, nb, p, r);
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) {
      Store32(p->codes[b][r], _mm512_setzero_si512());
      if (layout.weight_parts == 2) Store32(p->codes_lo[b][r], _mm512_setzero_si512());
    }
    for (int64_t g = 0; g < groups; ++g) p->scale[g][r] = 0.0f, p->offset[g][r] = 0.0f;
  }
}

struct Args {
  const uint32_t* x_packed;  // [parts][t_tiles][K / 2 pairs][16] (PackTokensVnni)
  int64_t part_size;         // u32 per part
  const float* xsum;         // [t_tiles][groups][16 tokens] (offset types)
  int64_t groups;            // K / (32 * group_blocks)
  int64_t T, K;
  const MatView* w;
  QuantLayout layout;
  MutMatF32 out;
};

// acc[i] += scale[g][i] * c[i] (- offset[g][i] * xsum of the group), for one 16 x 16 output
// tile; acc: [16 weights][16 tokens] in memory.
PROCTOR_AMXQ_TARGET inline void ApplyScales(const Args& a, const Panel& p, int64_t tt,
                                            int64_t g_abs, int64_t g, const float* c, float* acc,
                                            bool first) {
  if (a.layout.has_offset) {
    const __m512 xs = _mm512_loadu_ps(a.xsum + (tt * a.groups + g_abs) * kTile);
#pragma GCC unroll 16
    for (int i = 0; i < kTile; ++i) {
      const __m512 prev = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + 16 * i);
      const __m512 v =
          _mm512_fmadd_ps(_mm512_load_ps(c + 16 * i), _mm512_set1_ps(p.scale[g][i]), prev);
      _mm512_store_ps(acc + 16 * i, _mm512_fnmadd_ps(_mm512_set1_ps(p.offset[g][i]), xs, v));
    }
    return;
  }
#pragma GCC unroll 16
  for (int i = 0; i < kTile; ++i) {
    const __m512 prev = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + 16 * i);
    _mm512_store_ps(acc + 16 * i, _mm512_fmadd_ps(_mm512_load_ps(c + 16 * i),
                                                  _mm512_set1_ps(p.scale[g][i]), prev));
  }
}

// Two weight tiles (panels p0, p1) x two token tiles (t0, t1) over the panel's groups: four C
// tiles (0-3, amx_tiles.h) accumulate independently, so the tile products pipeline; after each
// group they are stored and scaled into the accumulators acc[w][t] ([16 weights][16 tokens] each).
// With `first`, the first group initialises the accumulators.
template <int kParts>
PROCTOR_AMXQ_TARGET void TileSteps2x2(const Args& a, const Panel& p0, const Panel& p1, int64_t t0,
                                      int64_t t1, int64_t b0, int64_t nb, float* c_buf,
                                      float* const acc[2][2], bool first) {
  const int G = a.layout.group_blocks;
  const int64_t pair_stride = (a.K / 2) * kTile;  // u32 between token tiles in x_packed
  const uint32_t* x0 = a.x_packed + t0 * pair_stride + b0 * 16 * kTile;
  const uint32_t* x1 = a.x_packed + t1 * pair_stride + b0 * 16 * kTile;
  for (int64_t g = 0; g < nb / G; ++g) {
    ZeroAmxCTiles();
    for (int64_t bb = 0; bb < G; ++bb) {
      const int64_t b = g * G + bb;
      for (int wp = 0; wp < a.layout.weight_parts; ++wp) {
        LoadAmxATiles(wp == 0 ? p0.codes[b][0] : p0.codes_lo[b][0],
                      wp == 0 ? p1.codes[b][0] : p1.codes_lo[b][0], 64);
#pragma GCC unroll 3
        for (int part = 0; part < kParts; ++part) {
          MultiplyAmxBTiles(x0 + part * a.part_size + b * 16 * kTile,
                            x1 + part * a.part_size + b * 16 * kTile);
        }
      }
    }
    StoreAmxCTiles(c_buf);
    const bool init = first && g == 0;
    const int64_t g_abs = b0 / G + g;
    ApplyScales(a, p0, t0, g_abs, g, c_buf, acc[0][0], init);
    ApplyScales(a, p0, t1, g_abs, g, c_buf + 256, acc[0][1], init);
    ApplyScales(a, p1, t0, g_abs, g, c_buf + 512, acc[1][0], init);
    ApplyScales(a, p1, t1, g_abs, g, c_buf + 768, acc[1][1], init);
  }
}

template <int kParts>
PROCTOR_AMXQ_TARGET void Kernel(const Args& a, int64_t n_begin, int64_t n_end) {
  thread_local std::unique_ptr<Panel[]> panels;  // [kPanelTiles]
  if (!panels) panels = std::make_unique<Panel[]>(kPanelTiles);
  const int64_t t_tiles = (a.T + kTile - 1) / kTile;
  // Accumulators between k chunks: [kPanelTiles][t_tiles][16 weights][16 tokens], plus a scratch
  // tile for the missing partner of an odd tile count.
  thread_local std::vector<float> c_store;
  float* const store =
      AlignedAmxScratch(c_store, static_cast<size_t>((kPanelTiles * t_tiles + 1) * kTile * kTile));
  float* const scratch = store + kPanelTiles * t_tiles * kTile * kTile;
  alignas(64) float c_buf[4 * kTile * kTile];
  const int64_t total_blocks = a.K / 32;
  ConfigureAmxTiles();
  // kPanelTiles weight tiles per pass: the x tiles of a token tile come from L3 once per pass and
  // are reused (from L1/L2) by each weight tile.
  for (int64_t nb0 = n_begin; nb0 < n_end; nb0 += kPanelTiles * kTile) {
    const int64_t tiles = std::min(kPanelTiles, (n_end - nb0 + kTile - 1) / kTile);
    for (int64_t b0 = 0; b0 < total_blocks; b0 += kChunkBlocks) {
      const int64_t nb = std::min(kChunkBlocks, total_blocks - b0);
      for (int64_t w = 0; w < tiles; ++w) {
        const int64_t n0 = nb0 + w * kTile;
        BuildPanel(a.layout, *a.w, n0, std::min(kTile, n_end - n0), b0, nb, &panels[w]);
      }
      for (int64_t tt = 0; tt < t_tiles; tt += 2) {
        const bool t_pair = tt + 1 < t_tiles;
        for (int64_t w = 0; w < tiles; w += 2) {
          const bool w_pair = w + 1 < tiles;
          auto tile_acc = [&](int64_t wi, int64_t ti) {
            return store + (wi * t_tiles + ti) * kTile * kTile;
          };
          float* const acc[2][2] = {{tile_acc(w, tt), t_pair ? tile_acc(w, tt + 1) : scratch},
                                    {w_pair ? tile_acc(w + 1, tt) : scratch,
                                     w_pair && t_pair ? tile_acc(w + 1, tt + 1) : scratch}};
          TileSteps2x2<kParts>(a, panels[w], panels[w_pair ? w + 1 : w], tt, t_pair ? tt + 1 : tt,
                               b0, nb, c_buf, acc, b0 == 0);
        }
      }
    }
    for (int64_t w = 0; w < tiles; ++w) {  // [weight][token] -> out[token][weight]
      const int64_t n0 = nb0 + w * kTile, rows = std::min(kTile, n_end - n0);
      for (int64_t t = 0; t < a.T; ++t) {
        const float* src = store + (w * t_tiles + t / kTile) * kTile * kTile + t % kTile;
        float* o = a.out.Row(t) + n0;
        for (int64_t i = 0; i < rows; ++i) o[i] = src[16 * i];
      }
    }
  }
  _tile_release();
}

// xsum[tile][g][j] = sum of x (bf16-rounded in bf16 mode) over scale group g for token
// 16 * tile + j (0 for padding tokens), summed in k order in f32.
PROCTOR_AMXQ_TARGET void GroupSums(const MatView& x, bool round_bf16, int64_t group_width,
                                   int64_t t_begin, int64_t t_end, int64_t groups, float* xsum) {
  for (int64_t t = t_begin; t < t_end; ++t) {
    float* dst = xsum + (t / kTile) * groups * kTile + t % kTile;
    if (t >= x.rows) {
      for (int64_t g = 0; g < groups; ++g) dst[g * kTile] = 0.0f;
      continue;
    }
    const float* xt = x.RowAs<float>(t);
    for (int64_t g = 0; g < groups; ++g) {
      __m512 sum = _mm512_setzero_ps();
      for (int64_t k = g * group_width; k < (g + 1) * group_width; k += 16) {
        __m512 v = _mm512_loadu_ps(xt + k);
        if (round_bf16) v = Bf16ToF32(_mm512_cvtneps_pbh(v));
        sum = _mm512_add_ps(sum, v);
      }
      dst[g * kTile] = _mm512_reduce_add_ps(sum);
    }
  }
}

}  // namespace

bool HasAmxQuantLayout(DType type) { return LayoutOf(type).decode != nullptr; }

void MatMulAmxQuant(const MatView& x, const LinearWeight& weight, MutMatF32 out, ComputeMode mode,
                    ThreadPool& pool) {
  const MatView& w = weight.dense();
  const CpuFeatures& cpu = CpuFeatures::Host();
  CHECK(HasAmxQuantLayout(w.type) && cpu.amx_bf16 && cpu.avx512_bf16);
  const QuantLayout layout = LayoutOf(w.type);
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  CHECK_MSG(K == w.cols && K % (32 * layout.group_blocks) == 0, "x [{}, {}] w [{}, {}]", T, K, N,
            w.cols);
  const int parts = mode == ComputeMode::kF32 ? 3 : 1;
  const int64_t t_padded = (T + kTile - 1) / kTile * kTile;
  const int64_t groups = K / (32 * layout.group_blocks);
  // Reused across calls by the calling thread; workers use them through `args` only.
  thread_local std::vector<uint32_t> x_packed;  // [parts][t_padded / 16][K / 2][16]
  thread_local std::vector<float> x_sums;       // [t_padded / 16][groups][16]
  x_packed.resize(static_cast<size_t>(parts * t_padded * K / 2));
  if (layout.has_offset) x_sums.resize(static_cast<size_t>(t_padded * groups));
  // Plain pointers: inside the workers' lambdas the thread_local names would be their own copies.
  uint32_t* const packed = x_packed.data();
  float* const sums = x_sums.data();
  pool.ParallelFor(static_cast<size_t>(t_padded / kTile), [&](size_t begin, size_t end, int) {
    PackTokensVnni(x, K, t_padded, parts, static_cast<int64_t>(begin), static_cast<int64_t>(end),
                   packed);
    if (layout.has_offset) {
      GroupSums(x, mode == ComputeMode::kBF16, K / groups, static_cast<int64_t>(begin) * kTile,
                static_cast<int64_t>(end) * kTile, groups, sums);
    }
  });
  const Args args{packed, t_padded * K / 2, sums, groups, T, K, &w, layout, out};
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(kTile),
                        [&](size_t begin, size_t end, int) {
                          if (parts == 1) {
                            Kernel<1>(args, static_cast<int64_t>(begin), static_cast<int64_t>(end));
                          } else {
                            Kernel<3>(args, static_cast<int64_t>(begin), static_cast<int64_t>(end));
                          }
                        });
}

}  // namespace proctor::ops::internal
