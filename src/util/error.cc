#include "util/error.h"

#include <cstdio>
#include <cstdlib>

namespace proctor {

void CheckFailed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "proctor: internal check failed at %s:%d: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace proctor
