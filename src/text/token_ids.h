// Token id lists as users type them: "1,2,3" (spaces and tabs around items allowed).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace proctor::text {

// "1, 2,3" -> {1, 2, 3}. Error("[<flag>] 'x' is not a token id (...)") naming the bad item and
// the whole text unless every item is an integer in [0, 2^31).
std::vector<int32_t> ParseTokenIds(std::string_view text, std::string_view flag);

}  // namespace proctor::text
