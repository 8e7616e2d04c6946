// PythonRandom against CPython's own random module (Debian's python3, the standard library).
#include "util/python_random.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(PythonRandom, DrawsWhatCPythonDraws) {
  // For each seed: 5 random(), 5 getrandbits(32), 5 getrandbits(7), 20 randbelow over several n
  // (choice over range(n)), 6 gauss(0, 1), in that order from one generator.
  const char* program =
      "import json, random\n"
      "out = []\n"
      "for seed in (0, 1, 42, 4294967295):\n"
      "    r = random.Random(seed)\n"
      "    d = {'random': [r.random() for _ in range(5)],\n"
      "         'bits32': [r.getrandbits(32) for _ in range(5)],\n"
      "         'bits7': [r.getrandbits(7) for _ in range(5)]}\n"
      "    d['below'] = [r.choice(range(n)) for n in (1, 2, 3, 5, 7, 100, 1000, 65537, 12345678,"
      " 4294967295) for _ in range(2)]\n"
      "    d['gauss'] = [r.gauss(0.0, 1.0) for _ in range(6)]\n"
      "    out.append(d)\n"
      "print(json.dumps(out))\n";
  const testing::CommandOutput run =
      testing::RunCommand("python3 -c \"" + std::string(program) + "\"");
  ASSERT_EQ(run.status, 0) << run.output;
  const nlohmann::json expected = nlohmann::json::parse(run.output);
  const uint32_t seeds[] = {0, 1, 42, 4294967295U};
  ASSERT_EQ(expected.size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    PythonRandom r(seeds[s]);
    const nlohmann::json& e = expected[s];
    for (const auto& v : e["random"]) EXPECT_EQ(r.Random(), v.get<double>()) << seeds[s];
    for (const auto& v : e["bits32"]) EXPECT_EQ(r.GetRandBits(32), v.get<uint32_t>()) << seeds[s];
    for (const auto& v : e["bits7"]) EXPECT_EQ(r.GetRandBits(7), v.get<uint32_t>()) << seeds[s];
    const uint32_t ns[] = {1, 2, 3, 5, 7, 100, 1000, 65537, 12345678, 4294967295U};
    size_t k = 0;
    for (uint32_t n : ns) {
      for (int rep = 0; rep < 2; ++rep) {
        EXPECT_EQ(r.RandBelow(n), e["below"][k++].get<uint32_t>()) << "n " << n;
      }
    }
    for (const auto& v : e["gauss"]) EXPECT_EQ(r.Gauss(0.0, 1.0), v.get<double>()) << seeds[s];
  }
}

}  // namespace
}  // namespace proctor
