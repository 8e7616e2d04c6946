// One spelling for "quantize the teacher this way", as `proctor compare --quantize SPEC` takes it:
//
//   affine<B>[-g<G>]      MLX affine, B bits (2, 3, 4, 5, 6, 8), groups of G (32, 64 default, 128)
//   mxfp4, mxfp8, nvfp4   MLX's floating-point modes (their own group sizes)
//   mixed_<L>_<H>[-g<G>]  mlx-lm's mixed recipes (mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6)
//   q4_k_m, q8_0, ...     a GGUF of llama.cpp's file type (model/gguf_recipe.h; GGUF and Llama
//   safetensors teachers)
//
// llama.cpp types proctor does not write (iq4_xs, q2_k_s, ...) are recognised so the error can
// say what to do instead: make the GGUF with llama-quantize and pass it as --candidate.
#pragma once

#include <string>
#include <string_view>

#include "model/mlx_export.h"

namespace proctor {

struct QuantizeSpec {
  std::string name;            // canonical: "affine4-g64", "mxfp4", "mixed_3_6-g64", "q4_k_m"
  std::string gguf_type;       // "q4_k_m" for a GGUF file type, "" for MLX
  MlxQuantizeOptions options;  // MLX only
};

// Error("[quantize] ...") naming the spec and the accepted spellings.
QuantizeSpec ParseQuantizeSpec(std::string_view spec);

// The accepted spellings, for --help and errors.
std::string QuantizeSpecHelp();

}  // namespace proctor
