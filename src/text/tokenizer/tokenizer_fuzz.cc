// libFuzzer target: any bytes as a tokenizer.json, loaded and used as `tokenize`, `corpus` and the
// tokenizer fingerprint use one (encode, decode, every id's text). A file may be refused
// (proctor::Error); it must never crash, allocate without bound or loop over a huge id range.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto tokenizer = text::LoadHfTokenizer(json, "", "fuzz.json");
    for (int32_t id = 0; id < static_cast<int32_t>(tokenizer->VocabSize()); ++id) {
      (void)tokenizer->IdToToken(id);
      (void)tokenizer->IsSpecial(id);
    }
    const auto ids = tokenizer->Encode("Hello world! <s> 1234 \xC3\xA9t\xC3\xA9 \t\n  x", true);
    (void)tokenizer->Decode(ids, false);
    (void)tokenizer->Decode(ids, true);
    // The input's own first bytes as text (invalid UTF-8 is an error, not a crash).
    (void)tokenizer->Encode(json.substr(0, 256), false);
  } catch (const Error&) {
  }
  return 0;
}
