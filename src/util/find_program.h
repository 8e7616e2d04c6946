// A program found as the shell finds it: the first executable of that name in $PATH's folders.
#pragma once

#include <filesystem>
#include <string_view>

namespace proctor {

// The path of `name` in the first folder of $PATH (an empty entry is the current folder) that
// holds an executable file of that name; empty when none does. Without $PATH: /usr/bin:/bin.
std::filesystem::path FindProgram(std::string_view name);

}  // namespace proctor
