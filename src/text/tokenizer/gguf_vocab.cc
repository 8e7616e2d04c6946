// GGUF vocabularies (tokenizer.ggml.*): not yet implemented.
#include <filesystem>
#include <memory>

#include "text/tokenizer/tokenizer.h"
#include "util/error.h"

namespace proctor::text {

std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::filesystem::path& path) {
  Fail("tokenizer", "{}: GGUF vocabularies are not supported yet", path.string());
}

}  // namespace proctor::text
