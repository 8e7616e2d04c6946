#include "model/quant_recipe.h"

#include <array>
#include <cctype>

namespace proctor {
namespace {

std::array<QuantRecipe, 4> Recipes() {
  return {QuantRecipe{"mixed_2_6", 2, 6}, QuantRecipe{"mixed_3_4", 3, 4},
          QuantRecipe{"mixed_3_6", 3, 6}, QuantRecipe{"mixed_4_6", 4, 6}};
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Python's a % b for b > 0 (the result has the sign of b).
int PyMod(int a, int b) {
  const int r = a % b;
  return r < 0 ? r + b : r;
}

}  // namespace

std::optional<QuantRecipe> FindQuantRecipe(std::string_view name) {
  for (const QuantRecipe& r : Recipes()) {
    if (r.name == name) return r;
  }
  return std::nullopt;
}

std::string QuantRecipeNames() {
  std::string out;
  for (const QuantRecipe& r : Recipes()) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

int LayerIndexOf(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    bool digits = !part.empty();
    for (char ch : part) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
    if (digits && part.size() < 9) {
      int value = 0;
      for (char ch : part) value = value * 10 + (ch - '0');
      return value;
    }
    start = end + 1;
  }
  return 0;
}

int RecipeBits(const QuantRecipe& recipe, std::string_view path, int num_layers) {
  const int i = LayerIndexOf(path);
  const int eighth = num_layers / 8;
  const bool use_more_bits = i < eighth || i >= 7 * num_layers / 8 || PyMod(i - eighth, 3) == 2;
  // mlx-lm also names v_a_proj / v_b_proj (DeepSeek MLA); "v_proj" covers the models here.
  const bool is_v =
      Contains(path, "v_proj") || Contains(path, "v_a_proj") || Contains(path, "v_b_proj");
  if (is_v && use_more_bits) return recipe.high_bits;
  // Mixtral's experts keep their down projection as w2 (mlx-lm's switch_mlp.down_proj).
  const bool is_down = Contains(path, "down_proj") || path.ends_with(".w2");
  if (is_down && use_more_bits) return recipe.high_bits;
  if (Contains(path, "lm_head")) return recipe.high_bits;
  return recipe.low_bits;
}

bool IsQuantizableModule(std::string_view path) {
  if (path == "lm_head" || path == "model.embed_tokens") return true;
  const size_t dot = path.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? path : path.substr(dot + 1);
  for (std::string_view name : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                "down_proj", "qkv_proj", "gate_up_proj", "w1", "w2", "w3"}) {
    if (last == name) return path.starts_with("model.layers.");
  }
  return false;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative wildcard matching with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace proctor
