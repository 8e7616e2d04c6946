// AMX tile steps shared by the AMX MatMul kernels (matmul_amx.cc, matmul_amx_mlx.cc,
// matmul_amx_quant.cc; matmul_amx_q8.cc takes only the tile configuration and the scratch, with
// its own int8 plan). The bf16 kernels use the configuration ConfigureAmxTiles() loads
// (matmul_kernels.h: tiles 0-7 of 16 rows x 64 bytes) and one 2x2 register plan:
//   tiles 0-3: C, 16 weights x 16 tokens (f32), C[2 * i + j] = A[i] x B[j];
//   tiles 4-5: A, 16 weight rows x 32 k (bf16);
//   tiles 6-7: B, 16 k-pairs x 16 tokens (VNNI-packed bf16 pairs).
// The helpers are always inlined into their (AMX-targeted) callers: tile numbers must be literals.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <memory>
#include <vector>

#define PROCTOR_AMX_TILE_INLINE inline __attribute__((always_inline, target("amx-tile,amx-bf16")))

namespace proctor::ops::internal {

inline constexpr int64_t kAmxTileFloats = 16 * 16;  // f32 elements of one C tile

// ldtilecfg's 64-byte operand (palette 1): each tile's rows and bytes per row.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads `config` into the tile registers' configuration (AMX-TILE only, so the int8 kernels can
// inline it too).
inline __attribute__((always_inline, target("amx-tile"))) void LoadAmxTileConfig(
    const AmxTileConfig& config) {
  // ldtilecfg reads the struct, but GCC 12 may drop the stores that filled it as dead (seen when
  // the caller is compiled on its own): force them to memory first.
  asm volatile("" : : "r"(&config) : "memory");
  _tile_loadconfig(&config);
}

// `store` resized to hold `floats` from a 64-byte boundary; returns that boundary (tile loads
// and stores of whole cache lines).
inline float* AlignedAmxScratch(std::vector<float>& store, size_t floats) {
  store.resize(floats + 16);
  void* p = store.data();
  size_t space = store.size() * sizeof(float);
  return static_cast<float*>(std::align(64, floats * sizeof(float), p, space));
}

// C tiles 0-3 = 0.
PROCTOR_AMX_TILE_INLINE void ZeroAmxCTiles() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

// C tiles 0-3 <- c[4][16][16] (f32, 64-byte rows).
PROCTOR_AMX_TILE_INLINE void LoadAmxCTiles(const float* c) {
  _tile_loadd(0, c, 64);
  _tile_loadd(1, c + kAmxTileFloats, 64);
  _tile_loadd(2, c + 2 * kAmxTileFloats, 64);
  _tile_loadd(3, c + 3 * kAmxTileFloats, 64);
}

// c[4][16][16] <- C tiles 0-3.
PROCTOR_AMX_TILE_INLINE void StoreAmxCTiles(float* c) {
  _tile_stored(0, c, 64);
  _tile_stored(1, c + kAmxTileFloats, 64);
  _tile_stored(2, c + 2 * kAmxTileFloats, 64);
  _tile_stored(3, c + 3 * kAmxTileFloats, 64);
}

// A tiles 4-5 <- the weight panels a0 and a1 (16 rows each, `stride` bytes between rows).
PROCTOR_AMX_TILE_INLINE void LoadAmxATiles(const void* a0, const void* a1, int64_t stride) {
  _tile_loadd(4, a0, stride);
  _tile_loadd(5, a1, stride);
}

// B tiles 6-7 <- the token tiles b0 and b1 (64-byte rows), then C[2i + j] += A[i] x B[j].
PROCTOR_AMX_TILE_INLINE void MultiplyAmxBTiles(const void* b0, const void* b1) {
  _tile_loadd(6, b0, 64);
  _tile_loadd(7, b1, 64);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

}  // namespace proctor::ops::internal
