// GGUF BPE pre-tokenizer presets (see gguf_presets.h). The regexes are llama.cpp's
// (src/llama-vocab.cpp, release bundled with node-llama-cpp 3.21.1), run here through PCRE2.
#include "text/tokenizer/gguf_presets.h"

#include <utility>

namespace proctor::text {

namespace {

const char kGpt2[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char kContractions[] = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";

std::string Llama3Like(const char* digits) {
  return std::string(kContractions) + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|)" + digits +
         R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

struct Entry {
  std::vector<std::string_view> names;
  GgufBpePreset preset;
};

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t;
    t.push_back({{"default", ""},
                 {"default",
                  {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"},
                  false,
                  false}});
    t.push_back(
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
         {"llama3", {Llama3Like(R"(\p{N}{1,3})")}, true, true}});
    t.push_back({{"dbrx", "smaug-bpe"}, {"dbrx", {Llama3Like(R"(\p{N}{1,3})")}, false, false}});
    t.push_back(
        {{"glm4", "chatglm-bpe"}, {"chatglm4", {Llama3Like(R"(\p{N}{1,3})")}, false, false}});
    t.push_back({{"qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez", "kormo", "f2llmv2",
                  "solar-open"},
                 {"qwen2", {Llama3Like(R"(\p{N})")}, false, false}});
    t.push_back(
        {{"qwen35"},
         {"qwen35",
          {std::string(kContractions) +
           R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
          false,
          false}});
    // clang-format would re-split these long Unicode literals differently on every run.
    // clang-format off
    t.push_back({{"deepseek-llm"},
                 {"deepseek-llm",
                  {"[\r\n]",
                   "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
                   "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"},
                  false,
                  false}});
    // clang-format on
    t.push_back({{"deepseek-coder"},
                 {"deepseek-coder",
                  {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"},
                  false,
                  false}});
    t.push_back({{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
                 {"deepseek-v3",
                  {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
                   "[!\"#$%&'()*+,\\-./"
                   ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
                   "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
                  false,
                  false}});
    t.push_back({{"falcon"},
                 {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, false, false}});
    t.push_back({{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
                  "mellum2"},
                 {"starcoder", {R"(\p{N})", kGpt2}, false, false}});
    t.push_back({{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "jina-es",
                  "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                  "modern-bert", "exaone4"},
                 {"gpt-2", {kGpt2}, false, false}});
    t.push_back({{"poro-chat", "bloom", "gpt3-finnish"},
                 {"bloom", {" ?[^(\\s|.,!?…。，、।۔،)]+"}, false, false}});
    t.push_back({{"viking"}, {"viking", {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}, false, false}});
    t.push_back(
        {{"tekken"},
         {"tekken",
          {R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
          true,
          true}});
    t.push_back(
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"},
         {"gpt-4o",
          {R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
          false,
          false}});
    return t;
  }();
  return table;
}

}  // namespace

std::optional<GgufBpePreset> FindGgufBpePreset(std::string_view pre) {
  for (const Entry& e : Table()) {
    for (std::string_view n : e.names) {
      if (n == pre) return e.preset;
    }
  }
  return std::nullopt;
}

std::string GgufBpePresetNames() {
  std::string out;
  for (const Entry& e : Table()) {
    for (std::string_view n : e.names) {
      if (n.empty()) continue;
      if (!out.empty()) out += ", ";
      out += n;
    }
  }
  return out;
}

}  // namespace proctor::text
