// Which modules `proctor quantize` quantizes, and with what bits: the quantizable set, --skip
// patterns, and mlx-lm's mixed-precision recipes (mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6).
//
// The recipes reproduce mlx-lm's `mixed_quant_predicate_builder` (mlx_lm/convert.py, which cites
// llama.cpp's Q4_K_M choices): with L decoder layers and i the layer index in the module path
// (0 for paths without one, e.g. model.embed_tokens and lm_head),
//   use_more_bits = i < L / 8  or  i >= 7 * L / 8  or  (i - L / 8) % 3 == 2      (integer /,
//                                                                 Python's % for negatives)
//   v_proj and down_proj with use_more_bits -> high bits; lm_head -> high bits; else low bits,
// all at the same group size, affine only. (low, high) = (2, 6), (3, 4), (3, 6), (4, 6).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace proctor {

struct QuantRecipe {
  std::string name;  // "mixed_3_6"
  int low_bits = 0;
  int high_bits = 0;
};

// nullopt for an unknown name.
std::optional<QuantRecipe> FindQuantRecipe(std::string_view name);
// "mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6" (for messages and --help).
std::string QuantRecipeNames();

// The bits mlx-lm's predicate gives the module at `module_path` ("model.layers.3.mlp.down_proj",
// "lm_head", "model.embed_tokens") of a model with `num_layers` decoder layers.
int RecipeBits(const QuantRecipe& recipe, std::string_view module_path, int num_layers);

// The layer index in a module path: the first dot-separated component that is all digits
// ("model.layers.12.mlp.up_proj" -> 12); 0 when there is none (as mlx-lm does).
int LayerIndexOf(std::string_view module_path);

// True for the Linear / Embedding modules `proctor quantize` quantizes: q/k/v/o_proj,
// gate/up/down_proj, Phi-3's fused qkv_proj and gate_up_proj, Mixtral's experts' w1/w2/w3,
// lm_head and model.embed_tokens (mlx-lm quantizes every module that has `to_quantized`; a
// mixture of experts' router stays full precision here).
bool IsQuantizableModule(std::string_view module_path);

// Glob match of --skip patterns: '*' matches any run of characters (dots included), '?' one
// character, everything else itself.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace proctor
