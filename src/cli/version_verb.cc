// `proctor version`: the version, the SIMD target in use and the thread count.
#include <fmt/format.h>

#include <thread>

#include "cli/verbs.h"
#include "util/machine.h"

namespace proctor::cli {

void RegisterVersionVerb(CLI::App& app) {
  auto* verb =
      app.add_subcommand("version", "Print the version and the machine facts proctor uses");
  verb->callback([] {
    fmt::print("proctor {}\n", PROCTOR_VERSION);
    fmt::print("hardware threads: {}\n", std::thread::hardware_concurrency());
    fmt::print("machine: {}\n", DescribeMachine(ReadMachineFacts()));
  });
}

}  // namespace proctor::cli
