// tokenizer.json pipeline stages, part 2: post-processors and decoders (see hf_components.h;
// normalizers and pre-tokenizers are in hf_components.cc).
#include <fmt/format.h>

#include <algorithm>

#include "text/tokenizer/hf_component_util.h"
#include "text/tokenizer/hf_components.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

using json = nlohmann::json;

// ------------------------------------------------------------------ post-processors

class TemplatePostProcessor : public PostProcessor {
 public:
  TemplatePostProcessor(const json& j, const std::string& where) {
    const json& single = j.at("single");
    const json& specials = j.at("special_tokens");
    bool seen_sequence = false;
    for (const json& item : single) {
      if (item.contains("SpecialToken")) {
        std::string id = item["SpecialToken"].at("id").get<std::string>();
        if (!specials.contains(id)) {
          Fail("tokenizer",
               "{}: TemplateProcessing uses special token '{}' that its "
               "special_tokens map does not define",
               where, id);
        }
        auto ids = specials[id].at("ids").get<std::vector<int32_t>>();
        auto& side = seen_sequence ? suffix_ : prefix_;
        side.insert(side.end(), ids.begin(), ids.end());
      } else if (item.contains("Sequence")) {
        std::string id = item["Sequence"].at("id").get<std::string>();
        if (id != "A" || seen_sequence) {
          Fail("tokenizer", "{}: TemplateProcessing single template must hold sequence A once",
               where);
        }
        seen_sequence = true;
      } else {
        Fail("tokenizer", "{}: TemplateProcessing item {} is not understood", where, item.dump());
      }
    }
    if (!seen_sequence) Fail("tokenizer", "{}: TemplateProcessing single has no sequence", where);
  }
  void Apply(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }
  std::vector<int32_t> Prefix() const override { return prefix_; }
  std::vector<int32_t> Suffix() const override { return suffix_; }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

class NoOpPostProcessor : public PostProcessor {
 public:
  void Apply(std::vector<int32_t>&) const override {}
};

class SequencePostProcessor : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void Apply(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->Apply(ids);
  }
  std::vector<int32_t> Prefix() const override {
    std::vector<int32_t> out;
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
      auto p = (*it)->Prefix();
      out.insert(out.end(), p.begin(), p.end());
    }
    return out;
  }
  std::vector<int32_t> Suffix() const override {
    std::vector<int32_t> out;
    for (const auto& part : parts_) {
      auto s = part->Suffix();
      out.insert(out.end(), s.begin(), s.end());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// ------------------------------------------------------------------ decoders

class ByteLevelDecoder : public Decoder {
 public:
  void Apply(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      size_t mark = bytes.size();
      size_t pos = 0;
      bool all = true;
      while (pos < t.size()) {
        int b = CharToByte(DecodeUtf8(t, &pos, InvalidByte::kFlagged));
        if (b < 0) {
          all = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!all) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, ReplaceInvalidUtf8(bytes));
  }
};

class ByteFallbackDecoder : public Decoder {
 public:
  void Apply(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (IsValidUtf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) -> int {
          if (c >= '0' && c <= '9') return c - '0';
          if (c >= 'A' && c <= 'F') return c - 'A' + 10;
          if (c >= 'a' && c <= 'f') return c - 'a' + 10;
          return -1;
        };
        int hi = hex(t[3]), lo = hex(t[4]);
        if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      }
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(const json& j, const std::string& where)
      : scheme_(ParsePrependScheme(j, where)) {
    AppendUtf8(ParseReplacement(j, where), &replacement_);
  }
  void Apply(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      std::string_view t = tokens[i];
      size_t pos = 0;
      while (pos < t.size()) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(t[pos++]);
        }
      }
      if (i == 0 && scheme_ != PrependScheme::kNever && !out.empty() && out[0] == ' ') {
        out.erase(0, 1);
      }
      tokens[i].swap(out);
    }
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
};

class FuseDecoder : public Decoder {
 public:
  void Apply(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.clear();
    tokens.push_back(std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(const json& j, const std::string& where)
      : start_(j.value("start", 0)), stop_(j.value("stop", 0)) {
    std::string c = GetString(j, "content", where);
    size_t pos = 0;
    content_ = c.empty() ? 0 : DecodeUtf8(c, &pos, InvalidByte::kFlagged);
    if (c.empty() || pos != c.size()) {
      Fail("tokenizer", "{}: Strip decoder content '{}' is not one character", where, c);
    }
  }
  void Apply(std::vector<std::string>& tokens) const override {
    std::vector<char32_t> chars;
    for (std::string& t : tokens) {
      chars.clear();
      size_t pos = 0;
      while (pos < t.size()) chars.push_back(DecodeUtf8(t, &pos, InvalidByte::kFlagged));
      size_t start_cut = 0;
      while (start_cut < chars.size() && start_cut < start_ && chars[start_cut] == content_) {
        ++start_cut;
      }
      size_t stop_cut = 0;
      while (stop_cut < chars.size() && stop_cut < stop_ &&
             chars[chars.size() - 1 - stop_cut] == content_) {
        ++stop_cut;
      }
      // Rust takes (byte length - cuts) characters after the start cut.
      size_t take = t.size() >= start_cut + stop_cut ? t.size() - start_cut - stop_cut : 0;
      std::string out;
      for (size_t i = start_cut; i < chars.size() && i - start_cut < take; ++i) {
        AppendUtf8(chars[i], &out);
      }
      t.swap(out);
    }
  }

 private:
  size_t start_, stop_;
  char32_t content_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const json& j, const std::string& where)
      : pattern_(j.at("pattern"), where), content_(GetString(j, "content", where)), where_(where) {}
  void Apply(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = ReplaceAll(t, pattern_, content_, where_);
  }

 private:
  Pattern pattern_;
  std::string content_;
  std::string where_;
};

size_t TotalBytes(const std::vector<std::string>& tokens) {
  size_t bytes = 0;
  for (const std::string& t : tokens) bytes += t.size();
  return bytes;
}

class SequenceDecoder : public Decoder {
 public:
  SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts, std::string where)
      : parts_(std::move(parts)), where_(std::move(where)) {}
  void Apply(std::vector<std::string>& tokens) const override {
    const size_t input_bytes = TotalBytes(tokens);
    for (const auto& p : parts_) {
      p->Apply(tokens);
      CheckGrowth(input_bytes, TotalBytes(tokens), "the decoder Sequence", where_);
    }
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
  std::string where_;
};

}  // namespace

std::unique_ptr<PostProcessor> MakePostProcessor(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = TypeOf(j, where);
  if (type == "TemplateProcessing") return std::make_unique<TemplatePostProcessor>(j, where);
  if (type == "ByteLevel") return std::make_unique<NoOpPostProcessor>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (const json& p : ArrayField(j, "processors", where)) {
      parts.push_back(MakePostProcessor(p, where));
    }
    return std::make_unique<SequencePostProcessor>(std::move(parts));
  }
  Unsupported("post_processor", type, where);
}

std::unique_ptr<Decoder> MakeDecoder(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = TypeOf(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(j, where);
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(j, where);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(j, where);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const json& p : ArrayField(j, "decoders", where)) parts.push_back(MakeDecoder(p, where));
    return std::make_unique<SequenceDecoder>(std::move(parts), where);
  }
  Unsupported("decoder", type, where);
}

}  // namespace proctor::text
