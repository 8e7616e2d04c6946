// GGUF vocabularies (tokenizer.ggml.*), tokenized as llama.cpp does:
//   "llama": SentencePiece-style BPE driven by token scores (llm_tokenizer_spm), byte fallback
//            to <0xXX> tokens, spaces escaped to U+2581, a space prefix per text fragment;
//   "gpt2":  byte-level BPE with tokenizer.ggml.merges ranks after the regex pre-tokenizer named
//            by tokenizer.ggml.pre (gguf_presets.h).
// Special (control / user-defined / unknown) tokens written in the text are split out first,
// longest first, as llama.cpp's tokenizer_st_partition with parse_special.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <queue>

#include "formats/gguf.h"
#include "text/tokenizer/bpe.h"
#include "text/tokenizer/gguf_presets.h"
#include "text/tokenizer/gguf_tokenizer.h"
#include "text/tokenizer/hf_components.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

// llama.cpp token types (tokenizer.ggml.token_type).
enum TokenType : int {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

const char kSpace[] = "\xE2\x96\x81";  // U+2581

std::string EscapeWhitespace(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == ' ') {
      out += kSpace;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class GgufTokenizer : public Tokenizer {
 public:
  GgufTokenizer(const GgufFile& gguf, const std::string& source) : source_(source) {
    std::string model(gguf.GetString("tokenizer.ggml.model"));
    if (model == "llama") {
      kind_ = Kind::kSpm;
    } else if (model == "gpt2") {
      kind_ = Kind::kBpe;
    } else {
      Fail("tokenizer", "{}: tokenizer.ggml.model \"{}\" is not supported (llama, gpt2)", source,
           model);
    }
    auto tokens = gguf.GetStringArray("tokenizer.ggml.tokens");
    const size_t n = tokens.size();
    texts_.resize(n);
    types_.assign(n, kNormal);
    scores_.assign(n, 0.0f);
    if (gguf.Find("tokenizer.ggml.scores")) {
      scores_ = gguf.GetFloatArray("tokenizer.ggml.scores");
      if (scores_.size() < n) {
        Fail("tokenizer", "{}: tokenizer.ggml.scores has {} entries for {} tokens", source,
             scores_.size(), n);
      }
    }
    if (gguf.Find("tokenizer.ggml.token_type")) {
      auto types = gguf.GetIntArray("tokenizer.ggml.token_type");
      if (types.size() < n) {
        Fail("tokenizer", "{}: tokenizer.ggml.token_type has {} entries for {} tokens", source,
             types.size(), n);
      }
      for (size_t i = 0; i < n; ++i) types_[i] = static_cast<int>(types[i]);
    }
    token_to_id_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      texts_[i] = tokens[i].empty() ? fmt::format("[EMPTY_{}]", i) : std::string(tokens[i]);
      token_to_id_[texts_[i]] = static_cast<int32_t>(i);  // a later duplicate wins
    }

    if (kind_ == Kind::kSpm) {
      bos_ = 1, eos_ = 2, unk_ = 0;
      add_bos_ = true;
      add_space_prefix_ = true;
    } else {
      std::string pre(gguf.FindString("tokenizer.ggml.pre").value_or(""));
      auto preset = FindGgufBpePreset(pre);
      if (!preset) {
        Fail("tokenizer", "{}: tokenizer.ggml.pre \"{}\" is not a supported pre-tokenizer ({})",
             source, pre, GgufBpePresetNames());
      }
      preset_name_ = preset->name;
      for (const auto& r : preset->regexes) regexes_.push_back(std::make_unique<Regex>(r));
      add_bos_ = preset->add_bos;
      BpeOptions options;
      options.ignore_merges = preset->ignore_merges;
      options.skip_bad_merges = true;
      std::vector<std::pair<std::string, int64_t>> vocab;
      vocab.reserve(n);
      for (size_t i = 0; i < n; ++i) vocab.emplace_back(texts_[i], static_cast<int64_t>(i));
      std::vector<std::pair<std::string, std::string>> merges;
      auto merge_list = gguf.GetStringArray("tokenizer.ggml.merges");
      merges.reserve(merge_list.size());
      for (std::string_view m : merge_list) {
        size_t space = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
        if (space == std::string_view::npos) {
          merges.emplace_back();  // keeps the ranks of later merges; never matches
        } else {
          merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
        }
      }
      bpe_ = std::make_unique<BpeModel>(std::move(vocab), merges, options, source);
    }
    auto read_id = [&](const char* key, int32_t& id) {
      if (auto v = gguf.FindInt(key)) {
        if (*v >= 0 && static_cast<size_t>(*v) < n) id = static_cast<int32_t>(*v);
      }
    };
    if (bos_ >= 0 && static_cast<size_t>(bos_) >= n) bos_ = -1;
    if (eos_ >= 0 && static_cast<size_t>(eos_) >= n) eos_ = -1;
    read_id("tokenizer.ggml.bos_token_id", bos_);
    read_id("tokenizer.ggml.eos_token_id", eos_);
    read_id("tokenizer.ggml.unknown_token_id", unk_);
    auto read_flag = [&](const char* key, bool& flag) {
      if (const GgufValue* v = gguf.Find(key)) flag = v->AsBool();
    };
    read_flag("tokenizer.ggml.add_bos_token", add_bos_);
    read_flag("tokenizer.ggml.add_eos_token", add_eos_);
    if (kind_ == Kind::kSpm) read_flag("tokenizer.ggml.add_space_prefix", add_space_prefix_);
    if (add_bos_ && bos_ < 0)
      Fail("tokenizer", "{}: add_bos is set but there is no BOS id", source);
    if (add_eos_ && eos_ < 0)
      Fail("tokenizer", "{}: add_eos is set but there is no EOS id", source);

    // Special tokens, longest text first (stable: equal lengths keep id order).
    for (size_t i = 0; i < n; ++i) {
      int t = types_[i];
      if (t == kControl || t == kUserDefined || t == kUnknown)
        special_.push_back(static_cast<int32_t>(i));
    }
    std::stable_sort(special_.begin(), special_.end(),
                     [this](int32_t a, int32_t b) { return texts_[a].size() > texts_[b].size(); });
    rstrip_.assign(n, false);
    std::string name(gguf.FindString("general.name").value_or(""));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
      // llama.cpp's Phi-3 rule: special tokens eat the whitespace after them, except these.
      for (int32_t id : special_) rstrip_[id] = true;
      for (const char* t : {"</s>"}) SetRstrip(t, true);
      for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) SetRstrip(t, false);
    }
    if (kind_ == Kind::kSpm) {
      for (int b = 0; b < 256; ++b) {
        int32_t id = TokenToId(fmt::format("<0x{:02X}>", b));
        if (id < 0) id = TokenToId(std::string(1, static_cast<char>(b)));
        spm_byte_ids_[b] = id;
      }
    }
  }

  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override {
    return EncodeImpl(text, add_special_tokens, true);
  }

  // parse_special = false leaves control and unknown tokens written in the text as text (only
  // user-defined tokens are split out), as llama.cpp's test vectors were made.
  std::vector<int32_t> EncodeImpl(std::string_view text, bool add_special,
                                  bool parse_special) const {
    if (!IsValidUtf8(text)) Fail("tokenizer", "input text is not valid UTF-8");
    struct Fragment {
      int32_t token;  // -1: text
      size_t begin, end;
    };
    std::list<Fragment> fragments;
    if (!text.empty()) fragments.push_back({-1, 0, text.size()});
    for (int32_t id : special_) {
      int t = types_[id];
      if (!parse_special && (t == kControl || t == kUnknown)) continue;
      const std::string& s = texts_[id];
      for (auto it = fragments.begin(); it != fragments.end(); ++it) {
        if (it->token >= 0) continue;
        size_t base = it->begin, end = it->end;
        while (true) {
          size_t match = text.substr(0, end).find(s, base);
          if (match == std::string_view::npos) break;
          auto source = it;
          if (match > base) {
            fragments.insert(std::next(it), {-1, base, match});
            ++it;
          }
          fragments.insert(std::next(it), {id, match, match + s.size()});
          ++it;
          size_t right = match + s.size();
          if (rstrip_[id]) {
            while (right < end && std::isspace(static_cast<unsigned char>(text[right]))) ++right;
          }
          fragments.erase(source);
          if (right < end) {
            fragments.insert(std::next(it), {-1, right, end});
            ++it;
            base = right;
            // Continue searching in the new right fragment (it is the current one).
          } else {
            break;
          }
        }
      }
    }
    std::vector<int32_t> out;
    if (kind_ == Kind::kSpm) {
      if (add_special && add_bos_) out.push_back(bos_);
      bool prev_special = true;
      for (const Fragment& f : fragments) {
        if (f.token >= 0) {
          out.push_back(f.token);
          prev_special = true;
          continue;
        }
        std::string piece;
        if (add_space_prefix_ && prev_special) piece = " ";
        piece += text.substr(f.begin, f.end - f.begin);
        SpmTokenize(EscapeWhitespace(piece), out);
        prev_special = false;
      }
      if (add_special && add_eos_) out.push_back(eos_);
      return out;
    }
    if (add_special && add_bos_) out.push_back(bos_);
    std::vector<Piece> pieces, scratch;
    std::vector<std::pair<size_t, size_t>> matches;
    std::string word;
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      pieces.clear();
      pieces.push_back(Piece{std::string(text.substr(f.begin, f.end - f.begin)), false});
      for (const auto& regex : regexes_) {
        scratch.clear();
        for (const Piece& p : pieces) {
          regex->FindAll(p.text, matches);
          SplitPiece(p, matches, SplitBehavior::kIsolated, false, scratch);
        }
        pieces.swap(scratch);
      }
      for (const Piece& p : pieces) {
        word.clear();
        AppendByteLevel(word, p.text);
        bpe_->Tokenize(word, out);
      }
    }
    if (add_special && add_eos_) out.push_back(eos_);
    return out;
  }

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::string out;
    bool remove_space = kind_ == Kind::kSpm && add_space_prefix_;
    size_t first = 0, count = ids.size();
    if (skip_special_tokens && add_bos_ && count > 0 && ids[0] == bos_) {
      remove_space = false;
      ++first;
      --count;
    }
    if (skip_special_tokens && add_eos_ && count > 0 && ids[first + count - 1] == eos_) --count;
    for (size_t i = first; i < first + count; ++i) {
      int32_t id = ids[i];
      if (id < 0 || static_cast<size_t>(id) >= texts_.size()) continue;
      int t = types_[id];
      std::string piece;
      if (t == kControl || t == kUnknown) {
        if (skip_special_tokens) continue;
        piece = texts_[id];
      } else if (t == kUserDefined) {
        piece = texts_[id];
      } else if (t == kByte) {
        const std::string& s = texts_[id];
        piece.push_back(static_cast<char>(std::stoi(s.substr(3, 2), nullptr, 16)));
      } else if (kind_ == Kind::kSpm) {
        piece = texts_[id];
        std::string unescaped;
        for (size_t p = 0; p < piece.size();) {
          if (piece.compare(p, 3, kSpace) == 0) {
            unescaped.push_back(' ');
            p += 3;
          } else {
            unescaped.push_back(piece[p++]);
          }
        }
        piece.swap(unescaped);
      } else {
        const std::string& s = texts_[id];
        size_t p = 0;
        while (p < s.size()) {
          size_t start = p;
          int b = CharToByte(DecodeUtf8(s, &p, InvalidByte::kFlagged));
          if (b < 0) {
            piece.append(s, start, p - start);
          } else {
            piece.push_back(static_cast<char>(b));
          }
        }
      }
      if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      remove_space = false;
      out += piece;
    }
    return ReplaceInvalidUtf8(out);
  }

  int32_t TokenToId(std::string_view token) const override {
    auto it = token_to_id_.find(token);
    return it == token_to_id_.end() ? -1 : it->second;
  }
  std::optional<std::string> IdToToken(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= texts_.size()) return std::nullopt;
    return texts_[id];
  }
  size_t VocabSize() const override { return texts_.size(); }
  bool IsSpecial(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < types_.size() &&
           (types_[id] == kControl || types_[id] == kUnknown);
  }
  int32_t BosId() const override { return bos_; }
  int32_t EosId() const override { return eos_; }
  std::string Describe() const override {
    return kind_ == Kind::kSpm ? fmt::format("GGUF llama (SentencePiece) {}", source_)
                               : fmt::format("GGUF gpt2 (BPE, pre {}) {}", preset_name_, source_);
  }

 private:
  enum class Kind { kSpm, kBpe };

  void SetRstrip(const char* token, bool value) {
    int32_t id = TokenToId(token);
    if (id >= 0) rstrip_[id] = value;
  }

  // llm_tokenizer_spm_session: merge the highest-scoring adjacent pair (leftmost on ties) while
  // the merged text is a token, then resegment pieces that are not tokens into bytes.
  void SpmTokenize(const std::string& text, std::vector<int32_t>& out) const {
    struct Symbol {
      int prev, next;
      size_t begin, n;
    };
    struct Bigram {
      int left, right;
      float score;
      size_t size;
    };
    auto worse = [](const Bigram& l, const Bigram& r) {
      return l.score < r.score || (l.score == r.score && l.left > r.left);
    };
    std::vector<Symbol> symbols;
    size_t offs = 0;
    int index = 0;
    while (offs < text.size()) {
      size_t len =
          std::min(Utf8SequenceLength(static_cast<uint8_t>(text[offs])), text.size() - offs);
      symbols.push_back({index - 1, offs + len == text.size() ? -1 : index + 1, offs, len});
      offs += len;
      ++index;
    }
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
    std::map<std::string, std::pair<int, int>> rev_merge;
    auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      std::string merged = text.substr(symbols[left].begin, symbols[left].n + symbols[right].n);
      int32_t id = TokenToId(merged);
      if (id < 0) return;
      queue.push({left, right, scores_[id], merged.size()});
      rev_merge[merged] = {left, right};
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      Bigram b = queue.top();
      queue.pop();
      Symbol& l = symbols[b.left];
      Symbol& r = symbols[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols[r.next].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    std::function<void(const Symbol&)> resegment = [&](const Symbol& s) {
      std::string piece = text.substr(s.begin, s.n);
      int32_t id = TokenToId(piece);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
      auto it = rev_merge.find(piece);
      if (it == rev_merge.end()) {
        for (unsigned char c : piece) {
          int32_t b = spm_byte_ids_[c];
          if (b >= 0) {
            out.push_back(b);
          } else if (unk_ >= 0) {
            out.push_back(unk_);
          }
        }
        return;
      }
      resegment(symbols[it->second.first]);
      resegment(symbols[it->second.second]);
    };
    if (symbols.empty()) return;
    for (int i = 0; i != -1; i = symbols[i].next) resegment(symbols[i]);
  }

  std::string source_;
  Kind kind_ = Kind::kSpm;
  std::vector<std::string> texts_;
  std::vector<int> types_;
  std::vector<float> scores_;
  TokenMap token_to_id_;
  std::vector<int32_t> special_;
  std::vector<bool> rstrip_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  int32_t spm_byte_ids_[256] = {};
  std::string preset_name_;
  std::vector<std::unique_ptr<Regex>> regexes_;
  std::unique_ptr<BpeModel> bpe_;
};

}  // namespace

std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::filesystem::path& path) {
  auto gguf = GgufFile::Open(path);
  return std::make_unique<GgufTokenizer>(*gguf, path.string());
}

std::vector<int32_t> EncodeGgufWithoutParsingSpecial(const Tokenizer& tokenizer,
                                                     std::string_view text) {
  auto* gguf = dynamic_cast<const GgufTokenizer*>(&tokenizer);
  if (!gguf) Fail("tokenizer", "not a GGUF tokenizer: {}", tokenizer.Describe());
  return gguf->EncodeImpl(text, false, false);
}

}  // namespace proctor::text
