#include "text/langdetect.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "text/python_str.h"
#include "text/tokenizer/regex.h"
#include "util/error.h"
#include "util/file.h"
#include "util/python_random.h"
#include "util/utf8.h"

namespace proctor::text {
namespace {

// langdetect's Detector constants.
constexpr double kAlphaDefault = 0.5;
constexpr double kAlphaWidth = 0.05;
constexpr int kIterationLimit = 1000;
constexpr double kProbThreshold = 0.1;
constexpr double kConvThreshold = 0.99999;
constexpr double kBaseFreq = 10000;
constexpr int kTrials = 7;
constexpr size_t kMaxTextLength = 10000;
constexpr uint32_t kSeed = 0;  // DetectorFactory.seed

std::u32string ToUtf32(std::string_view s) {
  std::u32string out;
  size_t pos = 0;
  while (pos < s.size()) out.push_back(DecodeUtf8(s, &pos, InvalidByte::kAsLatin1));
  return out;
}

// messages.properties as langdetect's Messages reads it: KEY=VALUE per line, \uXXXX escapes; in
// file order (the KANJI classes' order matters).
std::vector<std::pair<std::string, std::u32string>> ReadMessages(
    const std::filesystem::path& file) {
  std::vector<std::pair<std::string, std::u32string>> messages;
  const std::string content = ReadFileToString(file);
  int line_number = 0;
  for (std::string_view line : PythonSplit(content, "\n")) {
    ++line_number;
    line = PythonStrip(line);
    const size_t eq = line.find('=');
    if (line.empty() || eq == std::string_view::npos) continue;
    std::u32string value;
    const std::string_view raw = line.substr(eq + 1);
    for (size_t i = 0; i < raw.size();) {
      if (raw[i] == '\\' && i + 6 <= raw.size() && raw[i + 1] == 'u') {
        const std::string hex(raw.substr(i + 2, 4));
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          Fail("langdetect", "{} line {}: bad escape '\\u{}'", file.string(), line_number, hex);
        }
        value.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
        i += 6;
      } else if (raw[i] == '\\') {
        Fail("langdetect", "{} line {}: unsupported escape", file.string(), line_number);
      } else {
        size_t pos = i;
        value.push_back(DecodeUtf8(raw, &pos, InvalidByte::kAsLatin1));
        i = pos;
      }
    }
    messages.emplace_back(std::string(line.substr(0, eq)), std::move(value));
  }
  return messages;
}

}  // namespace

std::optional<std::filesystem::path> FindLangdetectPackage(
    std::vector<std::filesystem::path>* searched) {
  std::vector<std::filesystem::path> candidates = {"/usr/lib/python3/dist-packages/langdetect"};
  for (const char* root : {"/usr/local/lib", "/usr/lib"}) {
    std::error_code ec;
    std::vector<std::filesystem::path> pythons;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      if (entry.path().filename().string().rfind("python3", 0) == 0)
        pythons.push_back(entry.path());
    }
    std::sort(pythons.begin(), pythons.end());
    for (const auto& python : pythons) {
      candidates.push_back(python / "dist-packages" / "langdetect");
      candidates.push_back(python / "site-packages" / "langdetect");
    }
  }
  for (const auto& dir : candidates) {
    if (searched) searched->push_back(dir);
    std::error_code ec;
    if (std::filesystem::is_directory(dir / "profiles", ec)) return dir;
  }
  return std::nullopt;
}

LanguageDetector::LanguageDetector(const std::filesystem::path& package_dir) {
  const std::filesystem::path profiles = package_dir / "profiles";
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(profiles, ec)) {
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
      files.push_back(entry.path());
    }
  }
  if (ec || files.size() < 2) {
    Fail("langdetect", "{}: expected langdetect's language profiles (a file per language){}",
         profiles.string(), ec ? ": " + ec.message() : "");
  }
  std::sort(files.begin(), files.end());
  const size_t count = files.size();
  for (size_t index = 0; index < count; ++index) {
    nlohmann::json profile;
    try {
      profile = nlohmann::json::parse(ReadFileToString(files[index]));
      const std::string name = profile.at("name").get<std::string>();
      if (std::find(languages_.begin(), languages_.end(), name) != languages_.end()) {
        Fail("langdetect", "{}: a second profile of '{}'", files[index].string(), name);
      }
      languages_.push_back(name);
      const std::vector<double> n_words = profile.at("n_words").get<std::vector<double>>();
      if (n_words.size() < 3)
        Fail("langdetect", "{}: n_words needs 3 counts", files[index].string());
      for (const auto& [word, freq] : profile.at("freq").items()) {
        const std::u32string gram = ToUtf32(word);
        auto [it, inserted] = word_probabilities_.try_emplace(gram);
        if (inserted) it->second.assign(count, 0.0);
        if (gram.size() >= 1 && gram.size() <= 3) {
          it->second[index] = freq.get<double>() / n_words[gram.size() - 1];
        }
      }
    } catch (const nlohmann::json::exception& e) {
      Fail("langdetect", "{}: not a langdetect profile: {}", files[index].string(), e.what());
    }
  }
  const std::filesystem::path messages_file = package_dir / "utils" / "messages.properties";
  const auto messages = ReadMessages(messages_file);
  const std::unordered_map<std::string, std::u32string> by_key(messages.begin(), messages.end());
  auto get = [&](const std::string& key) -> const std::u32string& {
    const auto it = by_key.find(key);
    if (it == by_key.end()) Fail("langdetect", "{} has no {}", messages_file.string(), key);
    return it->second;
  };
  latin1_excluded_ = get("NGram.LATIN1_EXCLUDE");
  vi_letters_ = get("TO_NORMALIZE_VI_CHARS");
  vi_marks_ = get("DMARK_CLASS");
  for (const char* mark : {"0300", "0301", "0303", "0309", "0323"}) {
    vi_composed_.push_back(get(std::string("NORMALIZED_VI_CHARS_") + mark));
    if (vi_composed_.back().size() != vi_letters_.size()) {
      Fail("langdetect", "{}: NORMALIZED_VI_CHARS_{} does not match TO_NORMALIZE_VI_CHARS",
           messages_file.string(), mark);
    }
  }
  // The KANJI classes in file order (NGram.CJK_CLASS): each character maps to its class's first.
  for (const auto& [key, cls] : messages) {
    if (key.rfind("NGram.KANJI_", 0) != 0 || cls.empty()) continue;
    for (char32_t c : cls) cjk_map_[c] = cls[0];
  }
}

// Detector.append (URLs and mail addresses blanked, Vietnamese letter + mark composed, runs of
// spaces collapsed, 10,000 characters at most) and cleaning_text (Latin letters dropped when
// other scripts outnumber them two to one; every character from U+0300 counts as one, since
// langdetect compares its block number with a block name).
std::u32string LanguageDetector::Prepare(std::string_view text) const {
  static const Regex kUrl("https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}");
  static const Regex kMail("[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}");
  const std::u32string raw = ToUtf32(kMail.Replace(kUrl.Replace(text, " "), " "));
  std::u32string composed;
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t letter = vi_letters_.find(raw[i]);
    const size_t mark = i + 1 < raw.size() ? vi_marks_.find(raw[i + 1]) : std::u32string::npos;
    if (letter != std::u32string::npos && mark != std::u32string::npos) {
      composed.push_back(vi_composed_[mark][letter]);
      ++i;
    } else {
      composed.push_back(raw[i]);
    }
  }
  std::u32string out;
  char32_t previous = 0;
  for (size_t i = 0; i < std::min(composed.size(), kMaxTextLength); ++i) {
    const char32_t c = composed[i];
    if (c != U' ' || previous != U' ') out.push_back(c);
    previous = c;
  }
  size_t latin = 0;
  size_t non_latin = 0;
  for (char32_t c : out) {
    if (c >= U'A' && c <= U'z') {
      ++latin;
    } else if (c >= 0x300) {
      ++non_latin;
    }
  }
  if (latin * 2 < non_latin) {
    std::u32string without_latin;
    for (char32_t c : out) {
      if (c < U'A' || c > U'z') without_latin.push_back(c);
    }
    out = std::move(without_latin);
  }
  return out;
}

char32_t LanguageDetector::Normalize(char32_t c) const {
  if (c <= 0x7F) return (c < U'A' || (c > U'Z' && c < U'a') || c > U'z') ? U' ' : c;
  if (c <= 0xFF) return latin1_excluded_.find(c) != std::u32string::npos ? U' ' : c;
  if (c >= 0x180 && c <= 0x24F) {
    if (c == 0x219) return 0x15F;  // s with comma below => with cedilla (Romanian)
    if (c == 0x21B) return 0x163;
    return c;
  }
  if (c >= 0x2000 && c <= 0x206F) return U' ';
  if (c >= 0x600 && c <= 0x6FF) return c == 0x6CC ? 0x64A : c;  // Farsi yeh => Arabic yeh
  if (c >= 0x1E00 && c <= 0x1EFF) return c >= 0x1EA0 ? 0x1EC3 : c;
  if (c >= 0x3040 && c <= 0x309F) return 0x3042;
  if (c >= 0x30A0 && c <= 0x30FF) return 0x30A2;
  if ((c >= 0x3100 && c <= 0x312F) || (c >= 0x31A0 && c <= 0x31BF)) return 0x3105;
  if (c >= 0x4E00 && c <= 0x9FFF) {
    const auto it = cjk_map_.find(c);
    return it == cjk_map_.end() ? c : it->second;
  }
  if (c >= 0xAC00 && c <= 0xD7AF) return 0xAC00;
  return c;
}

// _extract_ngrams: the 1..3-grams the profiles know, outside all-capital words.
std::vector<const std::vector<double>*> LanguageDetector::NGrams(const std::u32string& text) const {
  std::vector<const std::vector<double>*> grams_found;
  std::u32string grams = U" ";
  bool capital_word = false;
  for (char32_t raw : text) {
    const char32_t c = Normalize(raw);
    const char32_t last = grams.back();
    if (last == U' ') {
      grams.assign(1, U' ');
      capital_word = false;
      if (c == U' ') continue;
    } else if (grams.size() >= 3) {
      grams.erase(0, 1);
    }
    grams.push_back(c);
    if (IsPythonUpper(c)) {
      if (IsPythonUpper(last)) capital_word = true;
    } else {
      capital_word = false;
    }
    if (capital_word) continue;
    for (size_t n = 1; n <= 3 && n <= grams.size(); ++n) {
      const std::u32string w = grams.substr(grams.size() - n);
      if (w == U" ") continue;
      const auto it = word_probabilities_.find(w);
      if (it != word_probabilities_.end()) grams_found.push_back(&it->second);
    }
  }
  return grams_found;
}

std::optional<std::string> LanguageDetector::Detect(std::string_view text) const {
  const std::vector<const std::vector<double>*> grams = NGrams(Prepare(text));
  if (grams.empty()) return std::nullopt;
  const size_t count = languages_.size();
  std::vector<double> total(count, 0.0);
  PythonRandom random(kSeed);
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<double> prob(count, 1.0 / static_cast<double>(count));
    const double alpha = kAlphaDefault + random.Gauss(0.0, 1.0) * kAlphaWidth;
    const double weight = alpha / kBaseFreq;
    for (int i = 0;; ++i) {
      const std::vector<double>& word =
          *grams[random.RandBelow(static_cast<uint32_t>(grams.size()))];
      for (size_t k = 0; k < count; ++k) prob[k] *= weight + word[k];
      if (i % 5 == 0) {
        double sum = 0;
        for (double p : prob) sum += p;
        double max = 0;
        for (double& p : prob) {
          p /= sum;
          max = std::max(max, p);
        }
        if (max > kConvThreshold || i >= kIterationLimit) break;
      }
    }
    for (size_t k = 0; k < count; ++k) total[k] += prob[k] / kTrials;
  }
  std::vector<size_t> order;
  for (size_t k = 0; k < count; ++k) {
    if (total[k] > kProbThreshold) order.push_back(k);
  }
  if (order.empty()) return "unknown";
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return total[a] > total[b]; });
  return languages_[order.front()];
}

}  // namespace proctor::text
