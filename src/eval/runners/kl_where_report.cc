#include "eval/runners/kl_where_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <span>

namespace proctor {
namespace {

// Text in double quotes with newlines, tabs, quotes and control bytes escaped.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string TokenText(const KlWhereContext& context, std::span<const int32_t> ids) {
  if (context.tokenizer == nullptr) return fmt::format("[{}]", fmt::join(ids, " "));
  return Quoted(context.tokenizer->Decode(ids, false));
}

// Token `id` as text after `before` (decoded together, so a leading space a tokenizer drops at
// the start of a text shows).
std::string Token(const KlWhereContext& context, std::span<const int32_t> before, int32_t id) {
  if (id < 0) return "?";
  if (context.tokenizer == nullptr || before.empty()) {
    return TokenText(context, std::span<const int32_t>(&id, 1));
  }
  std::vector<int32_t> both(before.begin(), before.end());
  both.push_back(id);
  const std::string prefix = context.tokenizer->Decode(before, false);
  const std::string whole = context.tokenizer->Decode(both, false);
  if (!whole.starts_with(prefix)) return TokenText(context, std::span<const int32_t>(&id, 1));
  return Quoted(whole.substr(prefix.size()));
}

std::string BucketTable(const std::vector<KlBucket>& buckets, const std::string& heading,
                        const std::function<std::string(const KlBucket&)>& label) {
  std::string out =
      fmt::format("  {:<28}  {:>9}  {:>10}  {:>6}\n", heading, "positions", "KL mean", "share");
  for (const KlBucket& b : buckets) {
    out += fmt::format("  {:<28}  {:>9}  {:>10.3e}  {:>5.1f}%\n", label(b), b.positions, b.kl_mean,
                       100.0 * b.kl_share);
  }
  return out;
}

}  // namespace

std::string FormatKlWhere(const KlWhere& where, const KlWhereContext& context) {
  std::string out = "Where the KL lives:\n";
  out += BucketTable(where.by_confidence, "teacher's top-1 probability", [](const KlBucket& b) {
    return fmt::format("[{:.2f}, {:.2f}{}", b.low, b.high, b.high >= 1.0 ? "]" : ")");
  });
  out += BucketTable(where.by_position, "scored position", [](const KlBucket& b) {
    if (b.high < b.low) return std::string("(none)");
    return fmt::format("{:.0f} - {:.0f}", b.low, b.high);
  });
  out += fmt::format(
      "  top-1 against the corpus's next token, of {} positions: lost {} (the teacher's top "
      "token\n  was the next token and the candidate's is not), gained {} (the reverse)\n",
      where.known_next, where.top1_lost, where.top1_gained);
  if (where.worst.empty()) return out;
  out += fmt::format("\nThe {} positions of largest KL:\n", where.worst.size());
  out += fmt::format("  {:>3}  {:>5}  {:>6}  {:>10}  {:>6}  {}\n", "#", "seq", "pos", "KL",
                     "p(top)", "context -> next token | teacher's top | candidate's top");
  for (size_t i = 0; i < where.worst.size(); ++i) {
    const KlWorstPosition& w = where.worst[i];
    std::string shown;
    std::vector<int32_t> tokens;
    std::span<const int32_t> before;
    if (context.tokens) {
      tokens = context.tokens(w.sequence);
      const int64_t predicted = context.first_predicted + w.position;
      const int64_t end = std::clamp<int64_t>(predicted, 0, static_cast<int64_t>(tokens.size()));
      const int64_t begin = std::max<int64_t>(0, end - context.context_tokens);
      before = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(begin),
                                                        static_cast<size_t>(end - begin));
      shown = TokenText(context, before) + " -> ";
    }
    out += fmt::format(
        "  {:>3}  {:>5}  {:>6}  {:>10.3e}  {:>6.3f}  {}{} | {} | {}\n", i + 1, w.sequence,
        w.position, w.kl, w.teacher_top1_probability, shown, Token(context, before, w.next_token),
        Token(context, before, w.teacher_argmax), Token(context, before, w.candidate_argmax));
  }
  return out;
}

}  // namespace proctor
