// The traits table of the GGUF block types: size, scalar references and SIMD kernels per type
// (the kernels are in ggml_legacy_blocks*.cc, ggml_k_quants*.cc and ggml_iq4_nl.cc).
#include "quant/ggml_blocks.h"

namespace proctor::quant {

const BlockTraits* FindBlockTraits(DType type) {
  // In the order of ggml_blocks.h.
  // clang-format off
#define PROCTOR_TRAITS(T, kElems, quantize)                                              \
  {DType::k##T, kElems, sizeof(Block##T), Dequantize##T##Ref, Dequantize##T, Dot##T##Ref, \
   Dot##T, quantize}
  static const BlockTraits kTraits[] = {
      PROCTOR_TRAITS(Q8_0, kQ8_0BlockElems, QuantizeQ8_0Ref),
      PROCTOR_TRAITS(Q4_0, kQ4_0BlockElems, QuantizeQ4_0Ref),
      PROCTOR_TRAITS(Q4_1, kQK, QuantizeQ4_1Ref),
      PROCTOR_TRAITS(Q5_0, kQK, QuantizeQ5_0Ref),
      PROCTOR_TRAITS(Q5_1, kQK, QuantizeQ5_1Ref),
      PROCTOR_TRAITS(Q2_K, kQK_K, QuantizeQ2_KRef),
      PROCTOR_TRAITS(Q3_K, kQK_K, QuantizeQ3_KRef),
      PROCTOR_TRAITS(Q4_K, kQK_K, QuantizeQ4_KRef),
      PROCTOR_TRAITS(Q5_K, kQK_K, QuantizeQ5_KRef),
      PROCTOR_TRAITS(Q6_K, kQK_K, QuantizeQ6_KRef),
      PROCTOR_TRAITS(IQ4_NL, kQK, QuantizeIQ4_NLRef),
  };
  // clang-format on
#undef PROCTOR_TRAITS
  for (const BlockTraits& traits : kTraits) {
    if (traits.type == type) return &traits;
  }
  return nullptr;
}

}  // namespace proctor::quant
