#include "text/token_ids.h"

#include <charconv>

#include "util/error.h"

namespace proctor::text {

std::vector<int32_t> ParseTokenIds(std::string_view text, std::string_view flag) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    std::string_view item = text.substr(pos, end - pos);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    int32_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 0) {
      Fail(flag,
           "'{}' is not a token id (expected comma-separated integers from 0 to 2147483647, in "
           "\"{}\")",
           item, text);
    }
    ids.push_back(value);
    pos = end + 1;
  }
  return ids;
}

}  // namespace proctor::text
