// Finding a model: directories, .gguf files, and ids in a fake Hugging Face cache ($HF_HOME).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "model/load.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using proctor::testing::TempDir;

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old != nullptr ? std::optional<std::string>(old) : std::nullopt});
      if (value != nullptr) {
        setenv(name, value, 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

void Touch(const fs::path& path, std::string_view text = "{}") {
  fs::create_directories(path.parent_path());
  WriteFileAtomic(path, text);
}

TEST(LocateModel, DirectoryAndGgufFile) {
  TempDir dir;
  Touch(dir.path() / "m" / "config.json");
  EXPECT_EQ(LocateModel((dir.path() / "m").string()).format, ModelFormat::kSafetensors);
  EXPECT_EQ(LocateModel((dir.path() / "m" / "config.json").string()).path, dir.path() / "m");
  Touch(dir.path() / "x.gguf", "GGUF");
  const LocatedModel gguf = LocateModel((dir.path() / "x.gguf").string());
  EXPECT_EQ(gguf.format, ModelFormat::kGguf);
  EXPECT_EQ(gguf.path, dir.path() / "x.gguf");
  fs::create_directories(dir.path() / "empty");
  const std::string empty = (dir.path() / "empty").string();
  EXPECT_ERROR_CONTAINS(LocateModel(empty), empty.c_str(), "no config.json");
  Touch(dir.path() / "notes.txt", "hi");
  const std::string notes = (dir.path() / "notes.txt").string();
  EXPECT_ERROR_CONTAINS(LocateModel(notes), notes.c_str(), "not a model");
  EXPECT_ERROR_CONTAINS(LocateModel("./does/not/exist"), "./does/not/exist",
                        "no such file or directory");
}

TEST(LocateModel, HuggingFaceCacheUsesRefsMain) {
  TempDir home;
  const fs::path repo = home.path() / "hub" / "models--org--tiny-model";
  Touch(repo / "snapshots" / "aaaa" / "config.json");
  Touch(repo / "snapshots" / "bbbb" / "config.json");
  Touch(repo / "refs" / "main", "bbbb\n");
  const std::string home_text = home.path().string();
  ScopedEnv env({{"HF_HOME", home_text.c_str()}, {"HF_HUB_CACHE", nullptr}});
  const LocatedModel found = LocateModel("org/tiny-model");
  EXPECT_EQ(found.format, ModelFormat::kSafetensors);
  EXPECT_EQ(found.path, repo / "snapshots" / "bbbb");
}

TEST(LocateModel, HuggingFaceCacheGgufSnapshotWithoutRefs) {
  TempDir home;
  const fs::path snapshot = home.path() / "hub" / "models--org--q" / "snapshots" / "cafe";
  Touch(snapshot / "model-Q8_0.gguf", "GGUF");
  const std::string home_text = home.path().string();
  ScopedEnv env({{"HF_HOME", home_text.c_str()}, {"HF_HUB_CACHE", nullptr}});
  const LocatedModel found = LocateModel("org/q");
  EXPECT_EQ(found.format, ModelFormat::kGguf);
  EXPECT_EQ(found.path, snapshot / "model-Q8_0.gguf");
}

TEST(LoadModel, FromHuggingFaceCacheId) {
  const fs::path golden = proctor::testing::FixturesDir() / "hf-goldens" / "qwen2-f32-bias";
  if (!fs::exists(golden)) GTEST_SKIP() << "fixture absent: " << golden.string();
  TempDir home;
  const fs::path repo = home.path() / "hub" / "models--tiny--qwen2";
  fs::create_directories(repo / "snapshots");
  fs::create_directory_symlink(golden, repo / "snapshots" / "0123abcd");
  Touch(repo / "refs" / "main", "0123abcd");
  const std::string home_text = home.path().string();
  ScopedEnv env({{"HF_HOME", home_text.c_str()}, {"HF_HUB_CACHE", nullptr}});
  const LoadedModel m = LoadModel("tiny/qwen2");
  EXPECT_EQ(m.spec, "tiny/qwen2");
  EXPECT_EQ(m.source, repo / "snapshots" / "0123abcd");
  EXPECT_EQ(m.config.arch, ModelArch::kQwen2);
  EXPECT_NE(m.weights.Find("model.layers.1.self_attn.v_proj.bias"), nullptr);
}

TEST(LocateModel, MissingIdListsWhereItLooked) {
  TempDir home;
  TempDir hub;
  const std::string home_text = home.path().string();
  const std::string hub_text = hub.path().string();
  ScopedEnv env({{"HF_HOME", home_text.c_str()},
                 {"HF_HUB_CACHE", hub_text.c_str()},
                 {"XDG_CACHE_HOME", nullptr}});
  const std::string in_home = (home.path() / "hub" / "models--org--absent").string();
  const std::string in_hub = (hub.path() / "models--org--absent").string();
  EXPECT_ERROR_CONTAINS(LocateModel("org/absent"), "org/absent", "nothing is downloaded",
                        in_home.c_str(), in_hub.c_str());
}

}  // namespace
}  // namespace proctor
