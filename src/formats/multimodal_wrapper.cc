#include "formats/multimodal_wrapper.h"

#include <utility>

#include "util/error.h"

namespace proctor {
namespace {

// Wrapper prefix -> the text model's.
constexpr std::pair<std::string_view, std::string_view> kPrefixes[] = {
    {"model.language_model", "model"},
    {"language_model.model", "model"},
    {"language_model.lm_head", "lm_head"},
    {"lm_head", "lm_head"},
};

}  // namespace

std::optional<std::string_view> TextModelTypeOfWrapper(std::string_view model_type) {
  if (model_type == "qwen3_5") return "qwen3_5_text";
  if (model_type == "gemma3") return "gemma3_text";
  return std::nullopt;
}

std::optional<std::string> TextModelName(std::string_view wrapped) {
  for (const auto& [prefix, text] : kPrefixes) {
    if (!wrapped.starts_with(prefix)) continue;
    const std::string_view rest = wrapped.substr(prefix.size());
    if (rest.empty() || rest.front() == '.') return std::string(text) + std::string(rest);
  }
  return std::nullopt;
}

void KeepTextModelTensors(WeightStore& weights) {
  for (const std::string& name : weights.Names()) {
    const std::optional<std::string> text = TextModelName(name);
    if (text && *text == name) continue;
    TensorInfo info = weights.Get(name);
    weights.Remove(name);
    if (!text) continue;
    if (weights.Has(*text)) {
      Fail("model",
           "{}: tensor \"{}\" is the language model's \"{}\", which the checkpoint "
           "also holds under that name",
           weights.origin(), name, *text);
    }
    info.name = *text;
    weights.AddView(std::move(info));
  }
}

}  // namespace proctor
