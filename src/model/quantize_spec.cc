#include "model/quantize_spec.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>

#include "model/gguf_recipe.h"
#include "model/quant_recipe.h"
#include "model/synthetic_mlx.h"
#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "quantize";

// llama-quantize's type names that proctor does not write (importance-matrix, IQ and ternary
// types, and the bare K-quant names), lower case.
bool IsGgufTypeName(std::string_view spec) {
  static constexpr std::array<std::string_view, 18> kNames = {
      "q2_k_s", "q3_k",   "q4_k",    "q5_k",  "iq1_s", "iq1_m",  "iq2_xxs", "iq2_xs", "iq2_s",
      "iq2_m",  "iq3_xs", "iq3_xxs", "iq3_s", "iq3_m", "iq4_nl", "iq4_xs",  "tq1_0",  "tq2_0"};
  std::string lower(spec);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto name : kNames) {
    if (lower == name) return true;
  }
  return false;
}

// "-g<G>" at the end of `spec`: strips it and returns G; 0 when absent; -1 when malformed.
int TakeGroupSuffix(std::string_view& spec) {
  const size_t dash = spec.rfind("-g");
  if (dash == std::string_view::npos) return 0;
  const std::string_view digits = spec.substr(dash + 2);
  int group = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), group);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return -1;
  spec = spec.substr(0, dash);
  return group;
}

[[noreturn]] void Refuse(std::string_view spec, std::string_view why) {
  Fail(kComponent, "--quantize \"{}\": {}. Accepted: {}", spec, why, QuantizeSpecHelp());
}

}  // namespace

std::string QuantizeSpecHelp() {
  return "affine<BITS>[-g<GROUP>] (bits 2, 3, 4, 5, 6, 8; group 32, 64 (default), 128; e.g. "
         "affine4-g64), mxfp4, mxfp8, nvfp4, an mlx-lm recipe " +
         QuantRecipeNames() +
         " [-g<GROUP>], or for a GGUF or Llama / Mistral safetensors teacher a llama.cpp file type "
         "(" +
         GgufFileTypeNames() + ")";
}

QuantizeSpec ParseQuantizeSpec(std::string_view spec) {
  QuantizeSpec out;
  if (const std::optional<GgufFileType> gguf = FindGgufFileType(spec)) {
    out.name = out.gguf_type = std::string(gguf->name);
    return out;
  }
  if (IsGgufTypeName(spec)) {
    Refuse(spec,
           "proctor does not write this GGUF type; make the GGUF with llama-quantize and pass it "
           "as --candidate FILE.gguf");
  }
  if (const auto fp = ParseMlxQuantSpec(spec); fp && fp->mode != quant::MlxMode::kAffine) {
    out.name = std::string(spec);
    out.options.mode = fp->mode;
    out.options.bits = fp->bits;
    out.options.group_size = fp->group_size;
    return out;
  }
  std::string_view rest = spec;
  int group = TakeGroupSuffix(rest);
  if (group < 0) Refuse(spec, "the group suffix must be -g<NUMBER>");
  if (group == 0) group = 64;
  if (rest.starts_with("mixed_")) {
    if (!FindQuantRecipe(rest)) Refuse(spec, fmt::format("unknown recipe \"{}\"", rest));
    out.options.recipe = std::string(rest);
  } else if (rest.starts_with("affine")) {
    const std::string_view digits = rest.substr(6);
    int bits = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
      Refuse(spec, "affine needs its bits, e.g. affine4");
    }
    out.options.bits = bits;
  } else {
    Refuse(spec, "not a quantization this tool makes");
  }
  out.options.group_size = group;
  try {
    out.options = ResolveMlxQuantizeOptions(out.options);
  } catch (const Error& e) {
    std::string_view why = e.what();
    if (why.starts_with("[quantize] ")) why.remove_prefix(11);
    Refuse(spec, why);
  }
  out.name = out.options.recipe.empty()
                 ? fmt::format("affine{}-g{}", out.options.bits, out.options.group_size)
                 : fmt::format("{}-g{}", out.options.recipe, out.options.group_size);
  return out;
}

}  // namespace proctor
