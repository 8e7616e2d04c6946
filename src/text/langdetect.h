// langdetect 1.0.9 (Nakatani Shuyo's language-detection, as the Python package ports it): n-gram
// profiles of 55 languages and a naive Bayes over randomly drawn 1..3-grams of the text, seven
// trials. IFEval's language verifiers call langdetect.detect(). Python's langdetect seeds its
// draws from the OS unless DetectorFactory.seed is set; this port always seeds with
// DetectorFactory.seed = 0, so a text gets one answer, the one langdetect gives with that seed.
// The profiles and normalization tables are read from an installed langdetect package
// (Debian's python3-langdetect or PyPI's): they are its data, not proctor's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace proctor::text {

// The langdetect package directory (the one holding profiles/ and utils/messages.properties):
// Debian's /usr/lib/python3/dist-packages/langdetect, then /usr/local/lib/python3*/ and
// /usr/lib/python3*/ site- and dist-packages. nullopt when none has it; `searched` gets the list.
std::optional<std::filesystem::path> FindLangdetectPackage(
    std::vector<std::filesystem::path>* searched = nullptr);

class LanguageDetector {
 public:
  // Reads DIR/profiles/* (languages in file-name order; Python takes os.listdir's order, which
  // only breaks ties differently) and DIR/utils/messages.properties. Error naming the file when
  // one is missing or malformed.
  explicit LanguageDetector(const std::filesystem::path& package_dir);

  // langdetect.detect(text) with DetectorFactory.seed = 0: a language code ("en", "zh-cn"),
  // "unknown" when no language reaches probability 0.1, nullopt when the text has no n-gram
  // the profiles know (langdetect raises LangDetectException "No features in text").
  std::optional<std::string> Detect(std::string_view text) const;

  const std::vector<std::string>& languages() const { return languages_; }

 private:
  std::u32string Prepare(std::string_view text) const;  // append() and cleaning_text()
  char32_t Normalize(char32_t c) const;                 // NGram.normalize
  std::vector<const std::vector<double>*> NGrams(const std::u32string& text) const;

  std::vector<std::string> languages_;
  // Each known n-gram's probability in every language (word_lang_prob_map).
  std::unordered_map<std::u32string, std::vector<double>> word_probabilities_;
  std::u32string latin1_excluded_;
  std::u32string vi_letters_;                // TO_NORMALIZE_VI_CHARS
  std::u32string vi_marks_;                  // DMARK_CLASS
  std::vector<std::u32string> vi_composed_;  // NORMALIZED_VI_CHARS_<mark>
  std::unordered_map<char32_t, char32_t> cjk_map_;
};

}  // namespace proctor::text
