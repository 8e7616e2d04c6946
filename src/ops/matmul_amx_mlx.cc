// AMX-BF16 prefill for MLX quantized weights (T >= 2). B tiles hold the activations packed by
// PackTokensVnni, as in the dense AMX kernel. Panels of 32 weight rows x 256 k are decoded to
// bf16 into an L1-sized buffer per token super block (no whole matrix is expanded); the two
// compute modes decode differently:
//  - f32 mode (x as three exact bf16 parts): exact products, no weight rounding. A tiles hold the
//    element values of the codes, which bf16 represents exactly (the integer code q for affine,
//    E2M1(q), E4M3(q)). C tiles accumulate one group's k range, sum_{k in g} E(q_k) x_k; then
//    AVX-512 adds them into f32 accumulators:  acc[n][t] += s[n][g] * C[n][t] + b[n][g] *
//    xsum[g][t]  (xsum: the activations summed over group g). This is the matrix-vector kernel's
//    factored form, each per-group dot product exact before its f32 rounding.
//  - bf16 mode (x rounded to bf16): A tiles hold the weights s * E(q) + b computed in f32 and
//    rounded to the nearest bf16 (as MLX computes bf16 models), and C tiles accumulate over all
//    of K like the dense kernel. This adds a weight rounding of at most 2^-9 relative to the
//    mode's activation rounding (documented in matmul.h), for the dense kernel's speed.
// Groups must be whole tile steps (32 k): nvfp4 (groups of 16) uses the f32 kernels instead.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"

#define PROCTOR_AMX_TARGET \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx512vbmi")))

// GCC 12 reports the _mm512_undefined_* placeholders inside the intrinsics as uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace proctor::ops::internal {
namespace {

constexpr int64_t kTile = 16;         // tile rows; 32 bf16 (64 bytes) per tile row
constexpr int64_t kTokenSuper = 256;  // tokens whose accumulators are kept while k advances
constexpr int64_t kKChunk = 256;      // k per decoded panel (32 rows x 256 bf16 = 16 KiB)

// vpermb indices and vpsrlvw shifts that cut 32 consecutive codes of `bits` bits (a block of
// 4 * bits bytes) into u16 lanes: lane i = bytes (B_i, B_i + 1) >> s_i, i * bits = 8 B_i + s_i.
// A code of <= 8 bits at bit offset s_i <= 7 always fits the 16-bit window.
struct ByteWindows {
  alignas(64) uint8_t bytes[64];
  alignas(64) uint16_t shifts[32];
};

constexpr std::array<ByteWindows, 9> MakeByteWindows() {
  std::array<ByteWindows, 9> all{};
  for (int bits = 2; bits <= 8; ++bits) {
    for (int i = 0; i < 32; ++i) {
      const int bit = i * bits;
      all[bits].bytes[2 * i] = static_cast<uint8_t>(bit / 8);
      all[bits].bytes[2 * i + 1] = static_cast<uint8_t>(bit / 8 + 1);
      all[bits].shifts[i] = static_cast<uint16_t>(bit % 8);
    }
  }
  return all;
}
alignas(64) constexpr std::array<ByteWindows, 9> kByteWindows = MakeByteWindows();

// bf16 bits of f32 values: exact ones by truncation, others rounded to nearest even.
template <bool kRound>
PROCTOR_AMX_TARGET inline __m256i ToBF16(__m512 values) {
  if constexpr (kRound) return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(values));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(values), 16));
}

// What the A tiles hold for code q of group g: kExact, E(q) (exact in bf16); otherwise
// bf16(s_g * E(q) + b_g), multiplied then added in f32 (as the reference decodes), then rounded.
template <bool kExact>
PROCTOR_AMX_TARGET inline __m256i TileValues(__m512 elements, __m512 scale, __m512 bias) {
  if constexpr (kExact) {
    return ToBF16<false>(elements);
  } else {
    __m512 product = _mm512_mul_ps(scale, elements);
    __asm__("" : "+v"(product));  // no fused multiply-add: round the product first
    return ToBF16<true>(_mm512_add_ps(product, bias));
  }
}

// table (lo: entries 0-31, hi: 32-63) of the TileValues of `vectors` element vectors, repeated.
template <bool kExact>
PROCTOR_AMX_TARGET inline void MakeTable(const __m512* elements, int vectors, __m512 scale,
                                         __m512 bias, __m512i* lo, __m512i* hi) {
  __m256i part[4];
  for (int v = 0; v < vectors; ++v) part[v] = TileValues<kExact>(elements[v], scale, bias);
  for (int v = vectors; v < 4; ++v) part[v] = part[v % vectors];
  *lo = _mm512_inserti64x4(_mm512_castsi256_si512(part[0]), part[1], 1);
  *hi = _mm512_inserti64x4(_mm512_castsi256_si512(part[2]), part[3], 1);
}

// Codes [k0, k0 + len) of row `row` (whole groups) as A-tile bf16 values (TileValues).
// Codes of <= 6 bits (other than mxfp8's) go through a per-group table of all 2^bits values:
// a block of 32 codes is one masked load, one vpermb, one vpsrlvw and one vpermw / vpermt2w.
// 8-bit codes and E4M3 are converted lane by lane through f32.
template <bool kExact>
PROCTOR_AMX_TARGET void DecodeRowBF16(const quant::MlxQuantizedMatrix& m, int64_t row, int64_t k0,
                                      int64_t len, const float* scales, const float* biases,
                                      uint16_t* out) {
  const int bits = m.bits;
  const int64_t G = m.group_size;
  const uint8_t* packed = m.packed.Row(row);
  const bool affine = m.mode == quant::MlxMode::kAffine;
  const float* e2m1 = quant::internal::E2M1Table();
  if (bits <= 6 && m.mode != quant::MlxMode::kMxfp8) {
    const ByteWindows& w = kByteWindows[static_cast<size_t>(bits)];
    const __m512i byte_index = _mm512_load_si512(w.bytes);
    const __m512i shifts = _mm512_load_si512(w.shifts);
    const __mmask64 block_bytes = (1ull << (4 * bits)) - 1;  // 32 codes
    // Element values of codes j & code_mask for j in [16 v, 16 v + 16), v < 4; the table needs
    // 2^bits distinct entries: one vector up to 4 bits (repeated), two for 5, four for 6.
    const int code_mask = (1 << bits) - 1;
    const int vectors = bits <= 4 ? 1 : bits == 5 ? 2 : 4;
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512 e2m1_values = _mm512_loadu_ps(e2m1);
    __m512 elements[4];
    for (int v = 0; v < vectors; ++v) {
      const __m512i codes = _mm512_and_si512(_mm512_add_epi32(iota, _mm512_set1_epi32(16 * v)),
                                             _mm512_set1_epi32(code_mask));
      elements[v] = affine ? _mm512_cvtepi32_ps(codes) : _mm512_permutexvar_ps(codes, e2m1_values);
    }
    // table[j] = value of code j & code_mask, j < 64 (vpermw reads 5 index bits, vpermt2w 6).
    __m512i table_lo, table_hi;
    if (kExact) {
      MakeTable<kExact>(elements, vectors, _mm512_setzero_ps(), _mm512_setzero_ps(), &table_lo,
                        &table_hi);
    }
    for (int64_t g = k0 / G; g < (k0 + len) / G; ++g) {
      if (!kExact) {
        MakeTable<kExact>(elements, vectors, _mm512_set1_ps(scales[g]), _mm512_set1_ps(biases[g]),
                          &table_lo, &table_hi);
      }
      for (int64_t k = g * G; k < (g + 1) * G; k += 32) {
        const __m512i bytes = _mm512_maskz_loadu_epi8(block_bytes, packed + k * bits / 8);
        const __m512i codes = _mm512_srlv_epi16(_mm512_permutexvar_epi8(byte_index, bytes), shifts);
        const __m512i values = bits == 6 ? _mm512_permutex2var_epi16(table_lo, codes, table_hi)
                                         : _mm512_permutexvar_epi16(codes, table_lo);
        _mm512_storeu_si512(out + (k - k0), values);
      }
    }
    return;
  }
  const float* e4m3 = quant::internal::E4M3Table();
  for (int64_t g = k0 / G; g < (k0 + len) / G; ++g) {  // 8-bit codes: one byte per lane
    const __m512 scale = _mm512_set1_ps(scales[g]), bias = _mm512_set1_ps(biases[g]);
    for (int64_t k = g * G; k < (g + 1) * G; k += 16) {
      const __m512i codes =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + k)));
      const __m512 elements =
          affine ? _mm512_cvtepi32_ps(codes) : _mm512_i32gather_ps(codes, e4m3, 4);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (k - k0)),
                          TileValues<kExact>(elements, scale, bias));
    }
  }
}

template <bool kExact>
PROCTOR_AMX_TARGET void AmxMlxKernel(const uint32_t* x_packed, int parts, int64_t T,
                                     int64_t k_padded, const quant::MlxQuantizedMatrix& m,
                                     const float* x_group_sums, MutMatF32 out, int64_t n_begin,
                                     int64_t n_end) {
  const int64_t K = m.cols(), G = m.group_size, groups = K / G;
  const int64_t pairs = k_padded / 2;
  const int64_t t_tiles = (T + kTile - 1) / kTile, t_padded = t_tiles * kTile;
  const int64_t part_size = t_padded * pairs;  // u32 per part of x_packed
  const int64_t super_tiles =
      2 * std::clamp<int64_t>((int64_t{1} << 20) / (k_padded * 2 * parts) / (2 * kTile), 1,
                              kTokenSuper / (2 * kTile));
  const bool affine = m.mode == quant::MlxMode::kAffine;
  thread_local std::vector<uint16_t> a_buf;    // [32 rows][kKChunk] bf16 element values
  thread_local std::vector<float> params;      // [scales | biases][32 rows][groups]
  thread_local std::vector<float> acc_store;   // [token tile pair][4 tiles][16 x 16] + align
  alignas(64) float c_tmp[4 * kTile * kTile];  // one group's C tiles
  a_buf.resize(static_cast<size_t>(2 * kTile * kKChunk));
  params.resize(static_cast<size_t>(2 * 2 * kTile * groups));
  float* acc_base =
      AlignedAmxScratch(acc_store, static_cast<size_t>(super_tiles / 2 * 4 * kTile * kTile));
  float* scales = params.data();
  float* biases = params.data() + 2 * kTile * groups;
  ConfigureAmxTiles();
  for (int64_t tsb = 0; tsb < t_tiles; tsb += super_tiles) {
    const int64_t tsb_end = std::min(t_tiles, tsb + super_tiles);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += 2 * kTile) {
      const int64_t n_valid = std::min<int64_t>(2 * kTile, n_end - n0);
      for (int64_t r = 0; r < 2 * kTile; ++r) {  // rows past n_valid repeat the last valid row
        const int64_t row = n0 + std::min(r, n_valid - 1);
        for (int64_t g = 0; g < groups; ++g) {
          scales[r * groups + g] = quant::internal::MlxGroupScale(m, row, g);
          biases[r * groups + g] = affine ? quant::internal::MlxGroupBias(m, row, g) : 0.0f;
        }
      }
      if (kExact) std::fill(acc_base, acc_base + (tsb_end - tsb + 1) / 2 * 4 * kTile * kTile, 0.0f);
      for (int64_t k0 = 0; k0 < K; k0 += kKChunk) {
        const int64_t kc = std::min(kKChunk, K - k0);
        for (int64_t r = 0; r < 2 * kTile; ++r) {
          DecodeRowBF16<kExact>(m, n0 + std::min(r, n_valid - 1), k0, kc, scales + r * groups,
                                biases + r * groups, a_buf.data() + r * kKChunk);
        }
        for (int64_t tt = tsb; tt < tsb_end; tt += 2) {
          const bool two = tt + 1 < t_tiles;
          const uint32_t* b0 = x_packed + tt * pairs * kTile;
          const uint32_t* b1 = two ? b0 + pairs * kTile : b0;
          float* acc = acc_base + (tt - tsb) / 2 * 4 * kTile * kTile;
          if constexpr (!kExact) {  // bf16 weights: C tiles accumulate over all of K
            if (k0 == 0) {
              ZeroAmxCTiles();
            } else {
              LoadAmxCTiles(acc);
            }
            for (int64_t k = k0; k < k0 + kc; k += 32) {
              const uint16_t* a = a_buf.data() + (k - k0);
              LoadAmxATiles(a, a + kTile * kKChunk, kKChunk * 2);
              MultiplyAmxBTiles(b0 + k / 2 * kTile, b1 + k / 2 * kTile);
            }
            StoreAmxCTiles(acc);
          }
          for (int64_t g = k0 / G; kExact && g < (k0 + kc) / G; ++g) {
            ZeroAmxCTiles();
            for (int64_t k = g * G; k < (g + 1) * G; k += 32) {
              const uint16_t* a = a_buf.data() + (k - k0);
              LoadAmxATiles(a, a + kTile * kKChunk, kKChunk * 2);
              const int64_t p0 = k / 2;
              for (int part = 0; part < parts; ++part) {
                MultiplyAmxBTiles(b0 + part * part_size + p0 * kTile,
                                  b1 + part * part_size + p0 * kTile);
              }
            }
            // C tile q = (weight tile q / 2, token tile q % 2): [16 weights][16 tokens].
            StoreAmxCTiles(c_tmp);
            const float* xsum = x_group_sums + g * t_padded + tt * kTile;
            const __m512 xs0 = _mm512_loadu_ps(xsum);
            const __m512 xs1 = two ? _mm512_loadu_ps(xsum + kTile) : _mm512_setzero_ps();
            for (int q = 0; q < 4; ++q) {
              const __m512 xs = (q & 1) ? xs1 : xs0;
              const int64_t r0 = (q >> 1) * kTile;
              for (int64_t i = 0; i < kTile; ++i) {
                float* a_row = acc + (q * kTile + i) * kTile;
                __m512 v = _mm512_load_ps(a_row);
                v = _mm512_fmadd_ps(_mm512_set1_ps(scales[(r0 + i) * groups + g]),
                                    _mm512_load_ps(c_tmp + (q * kTile + i) * kTile), v);
                v = _mm512_fmadd_ps(_mm512_set1_ps(biases[(r0 + i) * groups + g]), xs, v);
                _mm512_store_ps(a_row, v);
              }
            }
          }
          if (k0 + kc < K) continue;
          const int64_t t0 = tt * kTile;
          for (int q = 0; q < 4; ++q) {  // accumulators -> out[t][n], valid rows and tokens only
            const int64_t t_first = t0 + (q & 1) * kTile, r0 = (q >> 1) * kTile;
            if ((q & 1) && !two) continue;
            const int64_t t_valid = std::min<int64_t>(kTile, T - t_first);
            const int64_t n_count = std::clamp<int64_t>(n_valid - r0, 0, kTile);
            const float* a = acc + q * kTile * kTile;
            for (int64_t j = 0; j < t_valid; ++j) {
              float* o = out.Row(t_first + j) + n0 + r0;
              for (int64_t i = 0; i < n_count; ++i) o[i] = a[i * kTile + j];
            }
          }
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

void MatMulAmxMlx(const uint32_t* x_packed, int parts, int64_t T, int64_t k_padded,
                  const quant::MlxQuantizedMatrix& m, const float* x_group_sums, MutMatF32 out,
                  int64_t n_begin, int64_t n_end) {
  const CpuFeatures& cpu = CpuFeatures::Host();
  CHECK(cpu.amx_bf16 && cpu.avx512_vbmi && (parts == 1 || parts == 3) && m.group_size % 32 == 0);
  if (parts == 3) {
    AmxMlxKernel<true>(x_packed, parts, T, k_padded, m, x_group_sums, out, n_begin, n_end);
  } else {
    AmxMlxKernel<false>(x_packed, parts, T, k_padded, m, x_group_sums, out, n_begin, n_end);
  }
}

}  // namespace proctor::ops::internal

#pragma GCC diagnostic pop
