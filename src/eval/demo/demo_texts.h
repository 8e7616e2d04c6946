// The texts `proctor demo` builds its tokenizer and corpus from: the project's own
// documentation (docs/*.md), embedded into the binary at build time (cmake/embed_texts.cmake),
// so the demo needs neither downloads nor the source tree.
#pragma once

#include <string_view>
#include <vector>

namespace proctor {

struct EmbeddedText {
  std::string_view name;  // path relative to the source tree, e.g. "docs/formats.md"
  std::string_view text;  // the file's bytes
};

// In path order.
std::vector<EmbeddedText> DemoTexts();

}  // namespace proctor
