// LoadTokenizer: picks the tokenizer implementation for a path (see tokenizer.h).
#include <filesystem>

#include "text/tokenizer/gguf_tokenizer.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::text {

namespace fs = std::filesystem;

// LoadGgufTokenizer: gguf_tokenizer.h

namespace {

std::unique_ptr<Tokenizer> LoadJsonFile(const fs::path& file) {
  std::string text = ReadFileToString(file);
  std::string config;
  fs::path config_path = file.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_path)) config = ReadFileToString(config_path);
  return LoadHfTokenizer(text, config, file.string());
}

}  // namespace

std::unique_ptr<Tokenizer> LoadTokenizer(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "tokenizer.json")) return LoadJsonFile(path / "tokenizer.json");
    std::vector<fs::path> ggufs;
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
    }
    if (ggufs.size() == 1) return LoadGgufTokenizer(ggufs[0]);
    Fail("tokenizer", "{}: folder has no tokenizer.json{}", path.string(),
         ggufs.empty() ? std::string(" and no .gguf file")
                       : fmt::format(" and {} .gguf files (name one)", ggufs.size()));
  }
  if (!fs::exists(path, ec)) Fail("tokenizer", "{}: no such file or folder", path.string());
  if (path.extension() == ".gguf") return LoadGgufTokenizer(path);
  if (path.extension() == ".json") return LoadJsonFile(path);
  // Sniff: GGUF magic or JSON.
  ReadOnlyFile file(path);
  if (file.size() >= 4) {
    uint8_t magic[4];
    file.ReadAt(0, magic);
    if (std::string_view(reinterpret_cast<const char*>(magic), 4) == "GGUF") {
      return LoadGgufTokenizer(path);
    }
  }
  return LoadJsonFile(path);
}

}  // namespace proctor::text
