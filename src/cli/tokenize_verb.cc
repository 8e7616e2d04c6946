// `proctor tokenize MODEL (--text T | --file F | --decode IDS)`: runs a model's tokenizer.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli/verbs.h"
#include "text/token_ids.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  std::string decode;
  bool ids_only = false;
  bool no_special = false;
};

void Run(const TokenizeOptions& o) {
  auto tokenizer = text::LoadTokenizer(o.model);
  if (!o.decode.empty()) {
    std::vector<int32_t> ids = text::ParseTokenIds(o.decode, "--decode");
    for (int32_t id : ids) {
      if (static_cast<size_t>(id) >= tokenizer->VocabSize()) {
        Fail("tokenize", "--decode: id {} is outside the vocabulary (size {})", id,
             tokenizer->VocabSize());
      }
    }
    fmt::print("{}\n", tokenizer->Decode(ids, o.no_special));
    return;
  }
  std::string input = o.file.empty() ? o.text : ReadFileToString(o.file);
  std::vector<int32_t> ids = tokenizer->Encode(input, !o.no_special);
  if (o.ids_only) {
    fmt::print("{}\n", fmt::join(ids, " "));
    return;
  }
  for (int32_t id : ids) {
    std::string piece = tokenizer->IdToToken(id).value_or("");
    fmt::print(
        "{}\t{}\n", id,
        nlohmann::json(piece).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  fmt::print("{} tokens ({})\n", ids.size(), tokenizer->Describe());
}

}  // namespace

void RegisterTokenizeVerb(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  auto* verb = app.add_subcommand(
      "tokenize",
      "Encode text with a model's tokenizer (ids and pieces), or decode ids.\n"
      "MODEL: a folder with tokenizer.json (+ tokenizer_config.json), a tokenizer.json file, "
      "or a .gguf file (vocabulary-only files too).");
  verb->add_option("model,--model", options->model, "Model folder, tokenizer.json or .gguf")
      ->required();
  auto* text = verb->add_option("--text", options->text, "Text to encode");
  auto* file = verb->add_option("--file", options->file, "File whose contents to encode");
  auto* decode = verb->add_option("--decode", options->decode, "Comma-separated ids to decode");
  text->excludes(file);
  decode->excludes(text);
  decode->excludes(file);
  verb->add_flag("--ids-only", options->ids_only, "Print only the ids, space-separated");
  verb->add_flag("--no-special", options->no_special,
                 "Encode without adding BOS/EOS (for text a chat template rendered); with "
                 "--decode, drop special tokens");
  verb->callback([options, text, file, decode] {
    if (text->count() == 0 && file->count() == 0 && decode->count() == 0) {
      Fail("tokenize", "give --text, --file or --decode");
    }
    Run(*options);
  });
}

}  // namespace proctor::cli
