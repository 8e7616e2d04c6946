// The BPE pre-tokenizer presets named by a GGUF's tokenizer.ggml.pre: the regexes llama.cpp
// applies one after another (each splitting the pieces of the previous, matches isolated) and
// the per-preset defaults it sets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proctor::text {

struct GgufBpePreset {
  std::string name;  // the canonical preset
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a word that is itself a token is emitted whole
  bool add_bos = false;        // default before tokenizer.ggml.add_bos_token
};

// nullopt when llama.cpp's preset is unknown to proctor. An empty name means "default".
std::optional<GgufBpePreset> FindGgufBpePreset(std::string_view pre);

// Every preset with the first name llama.cpp accepts for it (what a GGUF writer puts in
// tokenizer.ggml.pre), in table order.
std::vector<std::pair<std::string, GgufBpePreset>> GgufBpePresetsByName();

// The names FindGgufBpePreset accepts (for error messages and docs).
std::string GgufBpePresetNames();

}  // namespace proctor::text
