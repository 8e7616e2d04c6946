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
    // llama.cpp's classes, every non-ASCII character written as \x{...}: as raw UTF-8 they were
    // once NFC-normalized on the way into this file (U+1FD3 became U+0390, ...), which left
    // ranges out of order and the regex uncompilable. clang-format would re-split the lines.
    // clang-format off
    t.push_back({{"deepseek-llm"},
                 {"deepseek-llm",
                  {"[\r\n]",
                   "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}"
                   "-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}"
                   "\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}"
                   "\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}"
                   "\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-"
                   "\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
                   "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-"
                   "\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}"
                   "\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}"
                   "\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}"
                   "\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-"
                   "\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}"
                   "\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-"
                   "\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
                   "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-"
                   "\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"
                   "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-"
                   "\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
                   "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-"
                   "\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-"
                   "\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
                   "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
                   "\\s+$", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}+"},
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

std::vector<std::pair<std::string, GgufBpePreset>> GgufBpePresetsByName() {
  std::vector<std::pair<std::string, GgufBpePreset>> out;
  out.reserve(Table().size());
  for (const Entry& e : Table()) out.emplace_back(std::string(e.names.front()), e.preset);
  return out;
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
