// AMX-BF16 MatMul kernel for bf16 weights in bf16 compute mode (prefill, T >= 2).
//
// Tiles: A = 16 weight rows x 32 k (bf16, loaded straight from the weight matrix), B = 16 k-pairs
// x 16 tokens (x packed once per call into the VNNI pair layout), C = 16 weights x 16 tokens (f32).
// Each step multiplies 2 A x 2 B tiles into 4 C tiles over all of K, so every output is one fixed
// chain of tdpbf16ps accumulations (independent of thread partitions). Linux needs a one-time
// arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA); without it (or without AMX) callers fall back.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"

#define PROCTOR_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

namespace proctor::ops::internal {
namespace {

constexpr int64_t kTile = 16;          // rows per tile; 32 bf16 (64 bytes) per tile row
constexpr int64_t kTokenSuper = 256;   // tokens whose packed x stays in L2 while N is swept
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXFeatureXTileData = 18;

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

PROCTOR_AMX_TARGET void ConfigureTiles() {
  TileConfig config{};
  config.palette_id = 1;
  for (int i = 0; i < 8; ++i) {
    config.rows[i] = kTile;
    config.colsb[i] = 64;
  }
  _tile_loadconfig(&config);
}

// C tile (16 weights x 16 tokens, f32) -> out[t0 + j][n0 + i] for valid i < n_valid, j < t_valid.
inline void StoreTransposed(const float* c, int64_t n_valid, int64_t t_valid, float* out,
                            int64_t out_stride) {
  for (int64_t j = 0; j < t_valid; ++j) {
    float* o = out + j * out_stride;
    for (int64_t i = 0; i < n_valid; ++i) o[i] = c[i * kTile + j];
  }
}

}  // namespace

bool HaveAmxBf16() {
  static const bool have = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") ||
        !__builtin_cpu_supports("avx512bw")) {
      return false;
    }
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) == 0;
  }();
  return have;
}

void PackTokensVnni(const MatView& x, int64_t k_padded, int64_t t_padded,
                    std::vector<uint32_t>& packed) {
  const int64_t pairs = k_padded / 2;
  packed.assign(static_cast<size_t>(t_padded * pairs), 0u);  // [t/16][pair][16]
  std::vector<uint16_t> row(static_cast<size_t>(k_padded), 0);
  for (int64_t t = 0; t < x.rows; ++t) {
    RoundToBF16Bits(x.RowAs<float>(t), x.cols, row.data());
    uint32_t* dst = packed.data() + (t / kTile) * pairs * kTile + (t % kTile);
    for (int64_t p = 0; p < pairs; ++p) {
      uint32_t v;
      std::memcpy(&v, row.data() + 2 * p, 4);
      dst[p * kTile] = v;
    }
  }
}

PROCTOR_AMX_TARGET void MatMulAmxBF16(const uint32_t* x_packed, int64_t T, int64_t k_padded,
                                      const MatView& w, MutMatF32 out, int64_t n_begin,
                                      int64_t n_end) {
  CHECK(w.type == DType::kBF16 && HaveAmxBf16());
  const int64_t K = w.cols;
  const int64_t pairs = k_padded / 2;
  const int64_t t_tiles = (T + kTile - 1) / kTile;
  const bool direct_rows = K % 32 == 0;  // whole 64-byte tile rows exist in w
  thread_local std::vector<uint16_t> w_block;  // [32][k_padded] zero-padded copy when needed
  alignas(64) float c[4][kTile * kTile];
  ConfigureTiles();
  for (int64_t tsb = 0; tsb < t_tiles; tsb += kTokenSuper / kTile) {
    const int64_t tsb_end = std::min(t_tiles, tsb + kTokenSuper / kTile);
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
      for (int64_t tt = tsb; tt < tsb_end; tt += 2) {
        const bool two = tt + 1 < t_tiles;
        const uint32_t* b0 = x_packed + tt * pairs * kTile;
        const uint32_t* b1 = two ? b0 + pairs * kTile : b0;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t p0 = 0; p0 < pairs; p0 += kTile) {
          const uint8_t* a = a_base + p0 * 4;
          _tile_loadd(4, a, a_stride);
          _tile_loadd(5, a + kTile * a_stride, a_stride);
          _tile_loadd(6, b0 + p0 * kTile, 64);
          _tile_loadd(7, b1 + p0 * kTile, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, c[0], 64);
        _tile_stored(1, c[1], 64);
        _tile_stored(2, c[2], 64);
        _tile_stored(3, c[3], 64);
        const int64_t t0 = tt * kTile;
        const int64_t t_valid0 = std::min<int64_t>(kTile, T - t0);
        const int64_t t_valid1 = two ? std::min<int64_t>(kTile, T - t0 - kTile) : 0;
        const int64_t n_valid0 = std::min<int64_t>(kTile, n_valid);
        const int64_t n_valid1 = std::max<int64_t>(0, n_valid - kTile);
        float* o = out.Row(t0) + n0;
        StoreTransposed(c[0], n_valid0, t_valid0, o, out.stride);
        StoreTransposed(c[2], n_valid1, t_valid0, o + kTile, out.stride);
        if (two) {
          StoreTransposed(c[1], n_valid0, t_valid1, o + kTile * out.stride, out.stride);
          StoreTransposed(c[3], n_valid1, t_valid1, o + kTile * out.stride + kTile, out.stride);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace proctor::ops::internal
