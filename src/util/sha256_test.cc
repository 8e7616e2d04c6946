// SHA-256 against the FIPS 180-2 test vectors and against sha256sum for a streamed file.
#include "util/sha256.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/error.h"

namespace proctor {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(std::string_view("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex(std::string_view("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  Sha256 digest;
  digest.Update(std::string_view("abcdbcdecdefdefgefgh"));
  digest.Update(std::string_view("fghighijhijkijkljklmklmnlmnomnopnopq"));
  EXPECT_EQ(digest.HexDigest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, StreamedFileOfAMillionAs) {
  // One million 'a' (FIPS 180-2 vector), and a 3,000,000-byte file that crosses the 1 MiB
  // read size, checked against coreutils' sha256sum when it is available.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("sha256_test_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto path = dir / "a.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(1000000, 'a');
  }
  EXPECT_EQ(Sha256FileHex(path),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const auto big = dir / "big.bin";
  {
    std::ofstream out(big, std::ios::binary);
    for (int i = 0; i < 3000000; ++i) out.put(static_cast<char>((i * 7919) & 255));
  }
  FILE* pipe = ::popen(fmt::format("sha256sum '{}' 2>/dev/null", big.string()).c_str(), "r");
  char line[200] = {0};
  const bool have = pipe != nullptr && std::fgets(line, sizeof(line), pipe) != nullptr;
  if (pipe != nullptr) ::pclose(pipe);
  if (have && std::string(line).size() >= 64) {
    EXPECT_EQ(Sha256FileHex(big), std::string(line, 64));
  }
  std::filesystem::remove_all(dir);
  if (!have) GTEST_SKIP() << "sha256sum not available for the multi-piece file check";
}

TEST(Sha256, MissingFileNamesIt) {
  try {
    Sha256FileHex("/nonexistent/proctor/x.bin");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/proctor/x.bin"), std::string::npos);
  }
}

}  // namespace
}  // namespace proctor
