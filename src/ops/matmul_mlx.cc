// MatMul for MLX quantized weights (see ops/matmul.h and quant/mlx_quant.h).
//
// Prefill (T >= 2): the blocked f32 kernel of matmul_kernels.cc, whose weight panels
// (16..32 rows x 256 k) are decoded group by group into a small f32 buffer (no more of the matrix
// is ever expanded). Panel rows are decoded in the block order of the matrix-vector kernel below
// (byte loads and table lookups, no gathers) and x is permuted once per call to match; the sum
// over k is the same, in another order.
//
// Decode (T == 1): a matrix-vector kernel that never forms weights. Per group g of a row, with
// codes q and activations x:
//   affine:  sum_j (s_g q_j + b_g) x_j  =  s_g * sum_j q_j x_j  +  b_g * sum_j x_j
//   mx / nv: sum_j s_g E(q_j) x_j       =  s_g * sum_j E(q_j) x_j
// (MLX's own qmv kernels use the same factoring.) A block of codes is loaded into u32 lanes (one
// byte per lane for 2-, 4-, 8-bit codes; two codes cut from a 32-bit window of the bit stream for
// 3-, 5-, 6-bit codes, AVX-512 only); code i of every lane is one shift away, turned into f32 by a
// conversion or, for widths <= 4 and E2M1, one 16-entry vpermps lookup. x is permuted once per
// call into the matching order (lane j, code i = block element j * codes_per_lane + i), and
// sum_j x_j is precomputed per group. mxfp8 (and 3/5/6 bits without AVX-512) use
// quant::DotMlxRow. Each output is one fixed chain of operations, independent of thread
// partitions.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"
#include "util/half.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_mlx.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

#undef PROCTOR_MLX_AVX3  // this file is compiled once per Highway target
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define PROCTOR_MLX_AVX3 1
#else
#define PROCTOR_MLX_AVX3 0
#endif

// Scales and biases of row `row`, decoded to f32 (biases are zero for the float modes).
void DecodeGroupParams(const quant::MlxQuantizedMatrix& m, int64_t row, float* scales,
                       float* biases) {
  const int64_t groups = m.cols() / m.group_size;
  if (m.mode != quant::MlxMode::kAffine) {  // u8 codes: E4M3 (nvfp4) or E8M0 (mxfp4, mxfp8)
    const uint8_t* codes = m.scales.Row(row);
    const float* e4m3 = quant::internal::E4M3Table();
    for (int64_t g = 0; g < groups; ++g) {
      const uint32_t c = codes[g];
      // E8M0: 2^(c - 127), i.e. the f32 exponent field c; c = 0 is 2^-127 (subnormal), 255 inf.
      const uint32_t e8m0_bits = c == 0 ? 0x00400000u : c == 255 ? 0x7F800000u : c << 23;
      scales[g] = m.mode == quant::MlxMode::kNvfp4 ? e4m3[c] : std::bit_cast<float>(e8m0_bits);
      biases[g] = 0.0f;
    }
    return;
  }
  const auto decode = [&](const MatView& v, float* out) {
    const uint8_t* p = v.Row(row);
    switch (v.type) {
      case DType::kF32:
        std::memcpy(out, p, static_cast<size_t>(groups) * 4);
        return;
      case DType::kBF16:
        for (int64_t g = 0; g < groups; ++g) {
          uint16_t h;
          std::memcpy(&h, p + 2 * g, 2);
          out[g] = BF16ToF32(h);
        }
        return;
      default: {  // f16
        const DF df;
        const hn::Rebind<hwy::float16_t, DF> df16;
        const int64_t N = static_cast<int64_t>(hn::Lanes(df));
        int64_t g = 0;
        for (; g + N <= groups; g += N) {
          const auto* src = reinterpret_cast<const hwy::float16_t*>(p + 2 * g);
          hn::StoreU(hn::PromoteTo(df, hn::LoadU(df16, src)), df, out + g);
        }
        for (; g < groups; ++g) {
          uint16_t h;
          std::memcpy(&h, p + 2 * g, 2);
          out[g] = F16ToF32(h);
        }
        return;
      }
    }
  };
  decode(m.scales, scales);
  decode(m.biases, biases);
}

constexpr int64_t kPrefetchBytes = 512;

// Codes per u32 lane of a block: 2-, 4- and 8-bit codes come one byte per lane (8 / bits codes);
// 3-, 5- and 6-bit codes two per lane, cut from 32-bit windows of the bit stream (AVX-512 only).
constexpr int PerLane(int bits) { return bits == 2 || bits == 4 || bits == 8 ? 8 / bits : 2; }

// Lane j of a block holds codes [j * PerLane, (j + 1) * PerLane) of the block in its low bits,
// LSB first. A block is Lanes * PerLane codes starting at code e (whole groups of a row).
template <int kBits, class D>
HWY_INLINE hn::Vec<hn::Rebind<uint32_t, D>> LoadBlock(D d, const uint8_t* row, int64_t e) {
  const hn::Rebind<uint32_t, D> du32;
  if constexpr (kBits == 2 || kBits == 4 || kBits == 8) {
    return hn::PromoteTo(du32, hn::LoadU(hn::Rebind<uint8_t, D>(), row + e * kBits / 8));
  } else {
#if PROCTOR_MLX_AVX3
    // 16 lanes x 2 codes = 32 codes = 2 * kBits 16-bit words (e is a multiple of 32, so the block
    // starts on a word). Lane j's codes start at bit 2 * kBits * j: words w_j, w_j + 1 of the
    // block (vpermw) shifted right by that bit offset mod 16. Past the block, words read as 0.
    static_assert(hn::MaxLanes(D()) == 16);
    alignas(64) static constexpr auto kTables = [] {
      struct {
        uint16_t words[32];
        uint32_t shifts[16];
      } t{};
      for (int j = 0; j < 16; ++j) {
        const int bit = 2 * kBits * j;
        t.words[2 * j] = static_cast<uint16_t>(bit / 16);
        t.words[2 * j + 1] = static_cast<uint16_t>(bit / 16 + 1);
        t.shifts[j] = static_cast<uint32_t>(bit % 16);
      }
      return t;
    }();
    const __mmask32 in_block = (1u << (2 * kBits)) - 1u;
    const __m512i words = _mm512_maskz_loadu_epi16(in_block, row + e * kBits / 8);
    const __m512i windows = _mm512_permutexvar_epi16(_mm512_load_si512(kTables.words), words);
    return hn::Vec<decltype(du32)>{_mm512_srlv_epi32(windows, _mm512_load_si512(kTables.shifts))};
#else
    static_assert(kBits == 2, "3-, 5- and 6-bit blocks need AVX-512");
    return hn::Zero(du32);
#endif
  }
}

// Element values of code i of every lane: (block >> i * kBits) & mask as f32 (affine), or a
// 16-entry table lookup of its low 4 bits (`table`: E2M1 values for mxfp4 / nvfp4, or
// j & mask for affine widths <= 4, where one vpermps replaces a mask and a conversion).
template <int kBits, int i, class D>
HWY_INLINE hn::Vec<D> CodeValues(D d, hn::Vec<hn::Rebind<uint32_t, D>> block, const float* table) {
  const hn::Rebind<uint32_t, D> du32;
  const hn::Rebind<int32_t, D> di32;
  const auto shifted = hn::ShiftRight<i * kBits>(block);
  if (table != nullptr) {
#if PROCTOR_MLX_AVX3
    if constexpr (hn::MaxLanes(D()) == 16) {
      return hn::Vec<D>{_mm512_permutexvar_ps(shifted.raw, _mm512_loadu_ps(table))};
    } else if constexpr (hn::MaxLanes(D()) == 8) {
      return hn::Vec<D>{
          _mm256_permutex2var_ps(_mm256_loadu_ps(table), shifted.raw, _mm256_loadu_ps(table + 8))};
    }
#endif
    return hn::GatherIndex(d, table, hn::BitCast(di32, hn::And(shifted, hn::Set(du32, 15u))));
  }
  // The last code of a byte-promoted lane needs no mask.
  constexpr bool kTopOfByte = (kBits == 2 || kBits == 4 || kBits == 8) && (i + 1) * kBits == 8;
  const auto codes = kTopOfByte ? shifted : hn::And(shifted, hn::Set(du32, (1u << kBits) - 1u));
  return hn::ConvertTo(d, hn::BitCast(di32, codes));
}

// x permuted into block order: xp[e + i*N + j] = x[e + j*P + i] (N lanes, P codes per lane).
void PermuteX(const float* x, int64_t K, int64_t N, int P, float* xp) {
  for (int64_t e = 0; e < K; e += N * P) {
    for (int i = 0; i < P; ++i) {
      for (int64_t j = 0; j < N; ++j) xp[e + i * N + j] = x[e + j * P + i];
    }
  }
}

// out[n + r] for r < rows (<= 4): rows n.. of m times x (given as xp and per-group sums).
template <int kBits, class D>
void DotRows(D d, const quant::MlxQuantizedMatrix& m, const float* xp, const float* x_sums,
             const float* table, int64_t n, int64_t rows, float* params, float* out) {
  constexpr int P = PerLane(kBits);
  using V = hn::Vec<D>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t K = m.cols(), G = m.group_size, groups = K / G;
  float* scales = params;               // [4][groups]
  float* biases = params + 4 * groups;  // [4][groups]
  // Always four rows (a short tail repeats its last row) so the loops have no row branches.
  const uint8_t* packed[4];
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t row = n + std::min(r, rows - 1);
    packed[r] = m.packed.Row(row);
    DecodeGroupParams(m, row, scales + r * groups, biases + r * groups);
  }
  const int64_t row_bytes = K * kBits / 8;
  V acc[4] = {hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
  for (int64_t g = 0; g < groups; ++g) {
    // Four streams at once outrun the hardware prefetcher: ask for the codes ahead.
    const int64_t ahead = g * G * kBits / 8 + kPrefetchBytes;
    if (ahead < row_bytes) {
      for (int r = 0; r < 4; ++r) hwy::Prefetch(packed[r] + ahead);
    }
    V gq[4] = {hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
    for (int64_t e = g * G; e < (g + 1) * G; e += N * P) {
      V xv[P];
      for (int i = 0; i < P; ++i) xv[i] = hn::LoadU(d, xp + e + i * N);
      for (int r = 0; r < 4; ++r) {
        const auto block = LoadBlock<kBits>(d, packed[r], e);
        [&]<int... I>(std::integer_sequence<int, I...>) {  // code i = 0..P-1, unrolled
          ((gq[r] = hn::MulAdd(CodeValues<kBits, I>(d, block, table), xv[I], gq[r])), ...);
        }
        (std::make_integer_sequence<int, P>());
      }
    }
    for (int r = 0; r < 4; ++r) {
      acc[r] = hn::MulAdd(hn::Set(d, scales[r * groups + g]), gq[r], acc[r]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float bias_sum = 0.0f;
    for (int64_t g = 0; g < groups; ++g) bias_sum += biases[r * groups + g] * x_sums[g];
    out[n + r] = hn::GetLane(hn::SumOfLanes(d, acc[r])) + bias_sum;
  }
}

// Matrix-vector product over rows [n_begin, n_end) with the block kernel: kMaxLanes caps the
// vector so a block (Lanes * PerLane codes) never spans two groups.
template <int kBits, size_t kMaxLanes>
void MatVecBlocks(const float* x, const quant::MlxQuantizedMatrix& m, const float* table,
                  float* out, int64_t n_begin, int64_t n_end) {
  const hn::CappedTag<float, kMaxLanes> d;
  const int64_t K = m.cols(), G = m.group_size, groups = K / G;
  thread_local std::vector<float> xp, x_sums, params;
  xp.resize(static_cast<size_t>(K));               // [K] permuted x
  x_sums.resize(static_cast<size_t>(groups));      // [groups]
  params.resize(static_cast<size_t>(8 * groups));  // [scales | biases][4 rows][groups]
  PermuteX(x, K, static_cast<int64_t>(hn::Lanes(d)), PerLane(kBits), xp.data());
  for (int64_t g = 0; g < groups; ++g) {
    float sum = 0.0f;
    for (int64_t j = g * G; j < (g + 1) * G; ++j) sum += x[j];
    x_sums[static_cast<size_t>(g)] = sum;
  }
  for (int64_t n = n_begin; n < n_end; n += 4) {
    DotRows<kBits>(d, m, xp.data(), x_sums.data(), table, n, std::min<int64_t>(4, n_end - n),
                   params.data(), out);
  }
}

// Tables for CodeValues: j & 3, j & 7, j & 15 (affine 2-, 3-, 4-bit codes) and E2M1.
const float* CodeTable(int mask) {
  alignas(64) static constexpr auto kTables = [] {
    std::array<std::array<float, 16>, 3> t{};
    for (int j = 0; j < 16; ++j) {
      t[0][j] = static_cast<float>(j & 3);
      t[1][j] = static_cast<float>(j & 7);
      t[2][j] = static_cast<float>(j & 15);
    }
    return t;
  }();
  return mask == 3 ? kTables[0].data() : mask == 7 ? kTables[1].data() : kTables[2].data();
}

// The block kernel serving m on this target: calls f.template operator()<kBits, kMaxLanes>(table)
// and returns true, or returns false (mxfp8; 3/5/6 bits without AVX-512).
template <class F>
bool WithBlockKernel(const quant::MlxQuantizedMatrix& m, F&& f) {
  // Lookup tables pay off only where vpermps exists (AVX-512); elsewhere mask and convert.
  const bool lookup = PROCTOR_MLX_AVX3 != 0;
  switch (m.mode) {
    case quant::MlxMode::kAffine:
      switch (m.bits) {
        case 2:
          f.template operator()<2, 8>(lookup ? CodeTable(3) : nullptr);
          return true;
        case 4:
          f.template operator()<4, 16>(lookup ? CodeTable(15) : nullptr);
          return true;
        case 8:
          f.template operator()<8, 16>(nullptr);
          return true;
#if PROCTOR_MLX_AVX3
        case 3:
          f.template operator()<3, 16>(CodeTable(7));
          return true;
        case 5:
          f.template operator()<5, 16>(nullptr);
          return true;
        case 6:
          f.template operator()<6, 16>(nullptr);
          return true;
#endif
        default:
          return false;
      }
    case quant::MlxMode::kMxfp4:
      f.template operator()<4, 16>(quant::internal::E2M1Table());
      return true;
    case quant::MlxMode::kNvfp4:
      f.template operator()<4, 8>(quant::internal::E2M1Table());
      return true;
    case quant::MlxMode::kMxfp8:
      return false;
  }
  return false;
}

void MatVecMlxF32Impl(const float* x, const quant::MlxQuantizedMatrix& m, float* out,
                      int64_t n_begin, int64_t n_end) {
  const bool done = WithBlockKernel(m, [&]<int kBits, size_t kMaxLanes>(const float* table) {
    MatVecBlocks<kBits, kMaxLanes>(x, m, table, out, n_begin, n_end);
  });
  if (done) return;
  for (int64_t n = n_begin; n < n_end; ++n) out[n] = quant::DotMlxRow(m, n, x);
}

// Prefill: the blocked kernel takes the weights of a panel row in block order (the matrix-vector
// kernel's lane order) and x permuted to match, so panels decode with byte loads and lookups
// instead of gathers. Returns false (x untouched) when m has no block kernel here: then panels
// decode in natural order through quant::DecodeMlxRowSegment.
bool PermuteXForMlxImpl(const MatView& x, const quant::MlxQuantizedMatrix& m, float* xp) {
  return WithBlockKernel(m, [&]<int kBits, size_t kMaxLanes>(const float*) {
    const int64_t N = static_cast<int64_t>(hn::Lanes(hn::CappedTag<float, kMaxLanes>()));
    for (int64_t t = 0; t < x.rows; ++t) {
      PermuteX(x.RowAs<float>(t), x.cols, N, PerLane(kBits), xp + t * x.cols);
    }
  });
}

template <int kBits, size_t kMaxLanes>
void DecodeBlocks(const quant::MlxQuantizedMatrix& m, const float* table, int64_t row, int64_t k0,
                  int64_t kc, float* out) {
  constexpr int P = PerLane(kBits);
  const hn::CappedTag<float, kMaxLanes> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t G = m.group_size;
  const uint8_t* packed = m.packed.Row(row);
  const bool affine = m.mode == quant::MlxMode::kAffine;
  for (int64_t g = k0 / G; g < (k0 + kc) / G; ++g) {
    const auto scale = hn::Set(d, quant::internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(d, affine ? quant::internal::MlxGroupBias(m, row, g) : 0.0f);
    for (int64_t e = g * G; e < (g + 1) * G; e += N * P) {
      const auto block = LoadBlock<kBits>(d, packed, e);
      float* o = out + (e - k0);
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((hn::StoreU(affine ? hn::Add(hn::Mul(scale, CodeValues<kBits, I>(d, block, table)), bias)
                            : hn::Mul(scale, CodeValues<kBits, I>(d, block, table)),
                     d, o + I * N)),
         ...);
      }
      (std::make_integer_sequence<int, P>());
    }
  }
}

void DecodeMlxPanelRowImpl(const quant::MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t kc,
                           float* out) {
  const bool done = WithBlockKernel(m, [&]<int kBits, size_t kMaxLanes>(const float* table) {
    DecodeBlocks<kBits, kMaxLanes>(m, table, row, k0, kc, out);
  });
  if (!done) quant::DecodeMlxRowSegment(m, row, k0, kc, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops::internal {

HWY_EXPORT(MatVecMlxF32Impl);
HWY_EXPORT(PermuteXForMlxImpl);
HWY_EXPORT(DecodeMlxPanelRowImpl);

void DecodeMlxPanelRow(const quant::MlxQuantizedMatrix& w, int64_t row, int64_t k0, int64_t kc,
                       float* out) {
  HWY_DYNAMIC_DISPATCH(DecodeMlxPanelRowImpl)(w, row, k0, kc, out);
}

void MatVecMlxF32(const float* x, const quant::MlxQuantizedMatrix& w, float* out, int64_t n_begin,
                  int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(MatVecMlxF32Impl)(x, w, out, n_begin, n_end);
}

namespace {
constexpr int64_t kMatVecGrain = 64;  // rows per partition unit for T == 1
}  // namespace

namespace {

// AMX prefill (matmul_amx_mlx.cc): x packed as bf16 tiles (rounded, or three exact parts in f32
// mode, where it is also summed per group for the bias term).
void MatMulMlxAmx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
                  ComputeMode mode, ThreadPool& pool) {
  const int64_t T = x.rows, K = x.cols, N = w.rows(), G = w.group_size, groups = K / G;
  const int parts = mode == ComputeMode::kF32 ? 3 : 1;
  const int64_t k_padded = (K + 31) / 32 * 32, t_padded = (T + 15) / 16 * 16;
  thread_local std::vector<uint32_t> packed;  // [parts][T/16][k_padded/2][16]
  packed.resize(static_cast<size_t>(parts * t_padded * k_padded / 2));
  uint32_t* const packed_data = packed.data();
  pool.ParallelFor(static_cast<size_t>(t_padded / 16), [&](size_t begin, size_t end, int) {
    PackTokensVnni(x, k_padded, t_padded, parts, static_cast<int64_t>(begin),
                   static_cast<int64_t>(end), packed_data);
  });
  // f32 mode: the activations summed over each group (the three parts add up to x exactly).
  std::vector<float> sums(parts == 3 ? static_cast<size_t>(groups * t_padded) : 0, 0.0f);
  for (int64_t t = 0; parts == 3 && t < T; ++t) {  // sums: [groups][t_padded]
    const float* xt = x.RowAs<float>(t);
    for (int64_t g = 0; g < groups; ++g) {
      float sum = 0.0f;
      for (int64_t k = g * G; k < (g + 1) * G; ++k) sum += xt[k];
      sums[static_cast<size_t>(g * t_padded + t)] = sum;
    }
  }
  pool.ParallelForGrain(static_cast<size_t>(N), kAmxPanelWidth, [&](size_t begin, size_t end, int) {
    MatMulAmxMlx(packed_data, parts, T, k_padded, w, sums.data(), out, static_cast<int64_t>(begin),
                 static_cast<int64_t>(end));
  });
}

}  // namespace

void MatMulMlx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
               ComputeMode mode, ThreadPool& pool, MatMulKernel kernel) {
  CHECK(x.type == DType::kF32 && x.row_stride % sizeof(float) == 0);
  CHECK_MSG(x.cols == w.cols() && out.rows == x.rows && out.cols == w.rows(),
            "x [{}, {}] w [{}, {}] out [{}, {}]", x.rows, x.cols, w.rows(), w.cols(), out.rows,
            out.cols);
  const int64_t T = x.rows, K = x.cols, N = w.rows();
  if (T == 0 || N == 0) return;
  if (kernel == MatMulKernel::kMlxAmxExact || kernel == MatMulKernel::kMlxAmxBf16Weights) {
    MatMulMlxAmx(x, w, out, mode, pool);
    return;
  }
  MatView xs = x;
  std::vector<float> rounded;  // [T, K]: activations rounded to bf16 (bf16 mode)
  if (mode == ComputeMode::kBF16) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) RoundToBF16Floats(x.RowAs<float>(t), K, &rounded[t * K]);
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
  }
  if (kernel == MatMulKernel::kMlxMatVec) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain, [&](size_t begin, size_t end, int) {
      MatVecMlxF32(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
                   static_cast<int64_t>(end));
    });
    return;
  }
  CHECK(kernel == MatMulKernel::kMlxF32Blocked);
  // x in the block order DecodeMlxPanelRow produces (see PermuteXForMlxImpl).
  std::vector<float> permuted(static_cast<size_t>(T * K));  // [T, K]
  if (HWY_DYNAMIC_DISPATCH(PermuteXForMlxImpl)(xs, w, permuted.data())) {
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(permuted.data())};
  }
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(BlockedPanelWidth()),
                        [&](size_t begin, size_t end, int) {
                          MatMulBlockedF32Mlx(xs, w, out, static_cast<int64_t>(begin),
                                              static_cast<int64_t>(end));
                        });
}

}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
