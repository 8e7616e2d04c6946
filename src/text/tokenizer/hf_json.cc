// tokenizer.json SAX reader (see hf_json.h).
#include "text/tokenizer/hf_json.h"

#include "util/error.h"

namespace proctor::text {

namespace {

using json = nlohmann::json;

class Sax {
 public:
  Sax(TokenizerJson& out, const std::string& source) : out_(out), source_(source) {}

  bool null() { return Value(json(nullptr)); }
  bool boolean(bool v) { return Value(json(v)); }
  bool number_integer(json::number_integer_t v) {
    if (mode_ == Mode::kVocab) return VocabId(v);
    return Value(json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (mode_ == Mode::kVocab) return VocabId(static_cast<int64_t>(v));
    return Value(json(v));
  }
  bool number_float(json::number_float_t v, const std::string&) {
    if (mode_ == Mode::kVocab) return Bad("model.vocab holds a non-integer id");
    return Value(json(v));
  }
  bool string(std::string& s) {
    switch (mode_) {
      case Mode::kVocab:
        return Bad("model.vocab holds a string where an id belongs");
      case Mode::kMerges: {
        size_t space = s.find(' ');
        if (space == std::string::npos) {
          return Bad("merge " + std::to_string(out_.merges.size()) + " '" + s +
                     "' has no space between its two parts");
        }
        out_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
        return true;
      }
      case Mode::kMergePair:
        if (pair_count_ >= 2) return Bad("a merge pair has more than two parts");
        (pair_count_ == 0 ? pair_.first : pair_.second) = std::move(s);
        ++pair_count_;
        return true;
      case Mode::kDom:
        return Value(json(std::move(s)));
    }
    return true;
  }
  bool binary(json::binary_t&) { return Bad("binary value"); }

  bool start_object(size_t) {
    if (mode_ != Mode::kDom) return Bad("unexpected object inside model.vocab or model.merges");
    if (AtModelKey("vocab")) {
      mode_ = Mode::kVocab;
      out_.has_vocab_object = true;
      return true;
    }
    stack_.push_back(Slot(json::object()));
    return true;
  }
  bool key(std::string& k) {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_count_ = 0;
      return true;
    }
    if (mode_ != Mode::kDom) return Bad("unexpected array inside model.vocab or a merge");
    if (AtModelKey("merges")) {
      mode_ = Mode::kMerges;
      out_.has_merges = true;
      return true;
    }
    stack_.push_back(Slot(json::array()));
    return true;
  }
  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ != 2) return Bad("a merge pair does not have two parts");
      out_.merges.push_back(std::move(pair_));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& e) {
    Fail("tokenizer", "{}: invalid JSON at byte {}: {}", source_, position, e.what());
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };

  bool Bad(const std::string& what) { Fail("tokenizer", "{}: {}", source_, what); }

  // True when the value about to start is root["model"][name].
  bool AtModelKey(const char* name) const {
    return stack_.size() == 2 && stack_.back() == model_ && key_ == name;
  }

  bool VocabId(int64_t id) {
    out_.vocab.emplace_back(std::move(vocab_key_), id);
    return true;
  }

  // Places a new container value at the current slot and returns a pointer to it.
  json* Slot(json&& v) {
    if (stack_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    json* child = &(*parent)[key_];
    *child = std::move(v);
    if (stack_.size() == 1 && key_ == "model") model_ = child;
    return child;
  }

  bool Value(json&& v) {
    if (stack_.empty()) {
      out_.root = std::move(v);
      return true;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
    } else {
      (*parent)[key_] = std::move(v);
    }
    return true;
  }

  TokenizerJson& out_;
  const std::string& source_;
  std::vector<json*> stack_;
  std::string key_;
  std::string vocab_key_;
  const json* model_ = nullptr;  // root["model"] once it has been opened
  Mode mode_ = Mode::kDom;
  std::pair<std::string, std::string> pair_;
  int pair_count_ = 0;
};

}  // namespace

TokenizerJson ParseTokenizerJson(std::string_view text, const std::string& source) {
  TokenizerJson out;
  Sax sax(out, source);
  bool ok = json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok) Fail("tokenizer", "{}: invalid JSON", source);
  if (!out.root.is_object()) Fail("tokenizer", "{}: top level is not a JSON object", source);
  return out;
}

}  // namespace proctor::text
