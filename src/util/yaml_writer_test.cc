// ToYaml against PyYAML (the oracle environment's yaml.safe_load): nested mappings and lists,
// lists of mappings, empty containers, strings that YAML would otherwise read as other types or
// that hold quotes, newlines, colons and non-ASCII text read back as the JSON they were written
// from; and the layout for people.
#include "util/yaml_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

const nlohmann::ordered_json& Sample() {
  static const nlohmann::ordered_json sample = {
      {"apiVersion", "batch/v1"},
      {"numbers", {{"int", 3}, {"negative", -7}, {"float", 0.25}, {"big", 1234567890123}}},
      {"flags", {{"yes", true}, {"no", false}, {"nothing", nullptr}}},
      {"tricky strings",
       {"yes", "no", "on", "null", "~", "3", "0x10", "1e3", "- item", "a: b", "#hash",
        "quote \" and 'single'", "line\nbreak\ttab", "ünïcödé ✓", "", " padded "}},
      {"list of maps",
       {{{"name", "a"}, {"value", 1}}, {{"name", "b"}, {"nested", {{"x", {1, 2}}}}}}},
      {"list of lists", {{1, 2}, nlohmann::ordered_json::array(), {{{"k", "v"}}}}},
      {"empty map", nlohmann::ordered_json::object()},
      {"empty list", nlohmann::ordered_json::array()},
      {"app.kubernetes.io/name", "proctor"}};
  return sample;
}

TEST(YamlWriter, LaysBlocksOutForPeople) {
  const nlohmann::ordered_json doc = {
      {"kind", "Job"},
      {"spec", {{"containers", {{{"name", "p"}, {"command", {"sh", "-c"}}}}}, {"count", 2}}}};
  EXPECT_EQ(ToYaml(doc),
            "kind: \"Job\"\n"
            "spec:\n"
            "  containers:\n"
            "    - name: \"p\"\n"
            "      command:\n"
            "        - \"sh\"\n"
            "        - \"-c\"\n"
            "  count: 2\n");
  EXPECT_EQ(ToYaml({{"yes", 1}, {"On", 2}, {"3d", 3}, {"a b", 4}, {"ok.key/x-y_z", 5}}),
            "\"yes\": 1\n\"On\": 2\n\"3d\": 3\n\"a b\": 4\nok.key/x-y_z: 5\n");
  EXPECT_EQ(ToYaml(nlohmann::ordered_json::object()), "{}\n");
  EXPECT_EQ(ToYaml("text"), "\"text\"\n");
}

TEST(YamlWriter, PyYamlReadsBackTheSameValues) {
  const std::string python = testing::Oracles("python").Path("python");
  if (python.empty()) GTEST_SKIP() << "oracle: " << testing::Oracles("python").problem;
  const testing::TempDir temp;
  const auto path = temp.path() / "doc.yaml";
  std::ofstream(path) << ToYaml(Sample());
  const nlohmann::json back = testing::RunOracleJson(
      python +
      " -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], "
      "encoding=\"utf-8\"))))' " +
      path.string());
  EXPECT_EQ(back, nlohmann::json(Sample())) << ToYaml(Sample());
}

}  // namespace
}  // namespace proctor
