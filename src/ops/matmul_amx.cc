// AMX-BF16 MatMul kernel for bf16 weights (prefill, T >= 2), in both compute modes:
//  - bf16 mode: x rounded to bf16 (one part);
//  - f32 mode: x split exactly into three bf16 parts (x = hi + mid + lo, each the bf16 rounding of
//    the remainder), so every product with a bf16 weight is exact in f32 and accumulates in f32.
//
// Tiles: A = 16 weight rows x 32 k (bf16, loaded straight from the weight matrix), B = 16 k-pairs
// x 16 tokens (x packed once per call into the VNNI pair layout), C = 16 weights x 16 tokens (f32).
// Each step multiplies 2 A x 2 B tiles into 4 C tiles over all of K, so every output is one fixed
// chain of tdpbf16ps accumulations (independent of thread partitions). Linux needs a one-time
// arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) (CpuFeatures::Host asks for it); without it (or
// without AMX) ChooseMatMulKernel picks another kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"
#include "util/half.h"

#define PROCTOR_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

namespace proctor::ops::internal {
namespace {

constexpr int64_t kTile = 16;         // rows per tile; 32 bf16 (64 bytes) per tile row
constexpr int64_t kTokenSuper = 256;  // tokens whose C tiles are kept while k chunks advance
constexpr int64_t kPairChunk = 128;   // k pairs per chunk (32 rows x 256 bf16 = 16 KiB of w)

}  // namespace

PROCTOR_AMX_TARGET void ConfigureAmxTiles() {
  AmxTileConfig config;
  for (int i = 0; i < 8; ++i) {
    config.rows[i] = kTile;
    config.colsb[i] = 64;
  }
  LoadAmxTileConfig(config);
}

namespace {

// C tile (16 weights x 16 tokens, f32) -> out[t0 + j][n0 + i] for valid i < n_valid, j < t_valid.
inline void StoreTransposed(const float* c, int64_t n_valid, int64_t t_valid, float* out,
                            int64_t out_stride) {
  for (int64_t j = 0; j < t_valid; ++j) {
    float* o = out + j * out_stride;
    for (int64_t i = 0; i < n_valid; ++i) o[i] = c[i * kTile + j];
  }
}

}  // namespace

void PackTokensVnni(const MatView& x, int64_t k_padded, int64_t t_padded, int parts,
                    int64_t tile_begin, int64_t tile_end, uint32_t* packed) {
  CHECK(parts == 1 || parts == 3);
  const int64_t pairs = k_padded / 2;
  const int64_t part_size = t_padded * pairs;
  // One tile of 16 tokens at a time: round its rows into [part][16][k_padded] bf16, then write
  // the tile's [pair][16] block sequentially.
  thread_local std::vector<uint16_t> rows;
  rows.assign(static_cast<size_t>(parts * kTile * k_padded), 0);
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    for (int64_t r = 0; r < kTile; ++r) {
      const int64_t t = tile * kTile + r;
      uint16_t* hi = rows.data() + r * k_padded;
      if (t >= x.rows) {  // padding tokens
        for (int part = 0; part < parts; ++part) {
          std::fill(hi + part * kTile * k_padded, hi + part * kTile * k_padded + x.cols, 0);
        }
        continue;
      }
      const float* xt = x.RowAs<float>(t);
      if (parts == 1) {
        RoundToBF16Bits(xt, x.cols, hi);
        continue;
      }
      uint16_t* mid = hi + kTile * k_padded;
      uint16_t* lo = mid + kTile * k_padded;
      for (int64_t k = 0; k < x.cols; ++k) {  // x = hi + mid + lo exactly
        float rest = xt[k];
        hi[k] = F32ToBF16(rest);
        rest -= BF16ToF32(hi[k]);
        mid[k] = F32ToBF16(rest);
        rest -= BF16ToF32(mid[k]);
        lo[k] = F32ToBF16(rest);
      }
    }
    for (int part = 0; part < parts; ++part) {
      const uint16_t* src = rows.data() + part * kTile * k_padded;
      uint32_t* dst = packed + part * part_size + tile * pairs * kTile;
      for (int64_t p = 0; p < pairs; ++p) {
        for (int64_t r = 0; r < kTile; ++r) {
          uint32_t v;
          std::memcpy(&v, src + r * k_padded + 2 * p, 4);
          dst[p * kTile + r] = v;
        }
      }
    }
  }
}

namespace {

template <int kParts>
PROCTOR_AMX_TARGET void AmxKernel(const uint32_t* x_packed, int64_t T, int64_t k_padded,
                                  const MatView& w, MutMatF32 out, int64_t n_begin, int64_t n_end) {
  const int64_t K = w.cols;
  const int64_t pairs = k_padded / 2;
  const int64_t t_tiles = (T + kTile - 1) / kTile;
  const int64_t part_size = (t_tiles * kTile) * pairs;  // u32 per part of x_packed
  // Token super block: its packed x (all parts, all of K) should stay in L2 (~1 MiB of it) while
  // the weight rows are swept; at most kTokenSuper tokens (the C store).
  const int64_t super_tiles =
      2 * std::clamp<int64_t>((int64_t{1} << 20) / (k_padded * 2 * kParts) / (2 * kTile), 1,
                              kTokenSuper / (2 * kTile));
  const bool direct_rows = K % 32 == 0;        // whole 64-byte tile rows exist in w
  thread_local std::vector<uint16_t> w_block;  // [32][k_padded] zero-padded copy when needed
  // C tiles of every token-tile pair of a super block, kept between k chunks: [pair][4][16x16].
  thread_local std::vector<float> c_store;
  float* c_base =
      AlignedAmxScratch(c_store, static_cast<size_t>(super_tiles / 2 * 4 * kTile * kTile));
  ConfigureAmxTiles();
  for (int64_t tsb = 0; tsb < t_tiles; tsb += super_tiles) {
    const int64_t tsb_end = std::min(t_tiles, tsb + super_tiles);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += 2 * kTile) {
      const int64_t n_valid = std::min<int64_t>(2 * kTile, n_end - n0);
      const uint8_t* a_base;
      int64_t a_stride;
      if (direct_rows && n_valid == 2 * kTile) {
        a_base = w.Row(n0);
        a_stride = static_cast<int64_t>(w.row_stride);
      } else {
        w_block.assign(static_cast<size_t>(2 * kTile * k_padded), 0);
        for (int64_t r = 0; r < n_valid; ++r) {
          std::memcpy(w_block.data() + r * k_padded, w.Row(n0 + r), static_cast<size_t>(K) * 2);
        }
        a_base = reinterpret_cast<const uint8_t*>(w_block.data());
        a_stride = k_padded * 2;
      }
      // k chunks: the 32 weight rows x kPairChunk pairs stay in L1 across the token tiles.
      for (int64_t pc = 0; pc < pairs; pc += kPairChunk) {
        const int64_t pc_end = std::min(pairs, pc + kPairChunk);
        for (int64_t tt = tsb; tt < tsb_end; tt += 2) {
          const bool two = tt + 1 < t_tiles;
          const uint32_t* b0 = x_packed + tt * pairs * kTile;
          const uint32_t* b1 = two ? b0 + pairs * kTile : b0;
          float* c = c_base + (tt - tsb) / 2 * 4 * kTile * kTile;
          if (pc == 0) {
            ZeroAmxCTiles();
          } else {
            LoadAmxCTiles(c);
          }
          for (int64_t p0 = pc; p0 < pc_end; p0 += kTile) {
            const uint8_t* a = a_base + p0 * 4;
            LoadAmxATiles(a, a + kTile * a_stride, a_stride);
#pragma GCC unroll 3
            for (int part = 0; part < kParts; ++part) {
              MultiplyAmxBTiles(b0 + part * part_size + p0 * kTile,
                                b1 + part * part_size + p0 * kTile);
            }
          }
          StoreAmxCTiles(c);
          if (pc_end < pairs) continue;
          const int64_t t0 = tt * kTile;
          const int64_t t_valid0 = std::min<int64_t>(kTile, T - t0);
          const int64_t t_valid1 = two ? std::min<int64_t>(kTile, T - t0 - kTile) : 0;
          const int64_t n_valid0 = std::min<int64_t>(kTile, n_valid);
          const int64_t n_valid1 = std::max<int64_t>(0, n_valid - kTile);
          float* o = out.Row(t0) + n0;
          StoreTransposed(c, n_valid0, t_valid0, o, out.stride);
          StoreTransposed(c + 2 * kTile * kTile, n_valid1, t_valid0, o + kTile, out.stride);
          if (two) {
            StoreTransposed(c + kTile * kTile, n_valid0, t_valid1, o + kTile * out.stride,
                            out.stride);
            StoreTransposed(c + 3 * kTile * kTile, n_valid1, t_valid1,
                            o + kTile * out.stride + kTile, out.stride);
          }
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

void MatMulAmxBF16(const uint32_t* x_packed, int parts, int64_t T, int64_t k_padded,
                   const MatView& w, MutMatF32 out, int64_t n_begin, int64_t n_end) {
  CHECK(w.type == DType::kBF16 && CpuFeatures::Host().amx_bf16 && (parts == 1 || parts == 3));
  if (parts == 1) {
    AmxKernel<1>(x_packed, T, k_padded, w, out, n_begin, n_end);
  } else {
    AmxKernel<3>(x_packed, T, k_padded, w, out, n_begin, n_end);
  }
}

}  // namespace proctor::ops::internal
