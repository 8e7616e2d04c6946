#include "eval/demo/demo_pipeline.h"

#include <fmt/format.h>

#include "eval/demo/demo_teacher.h"
#include "eval/demo/demo_texts.h"
#include "util/error.h"
#include "util/timing.h"

namespace proctor {

CompareOptions DemoCompareOptions(const DemoOptions& options, const std::string& teacher) {
  CompareOptions compare{.out_dir = options.work_dir,
                         .teacher = teacher,
                         .texts = DemoTexts(),
                         .texts_label = "the project's docs (embedded)",
                         .fit_n_seqs_to_texts = true,
                         .n_seqs = options.n_seqs,
                         .ctx_len = options.ctx_len,
                         .top_k = options.top_k,
                         .chunk_size = options.chunk_size,
                         .runtime = options.runtime,
                         .quiet = options.quiet,
                         .log = options.log};
  for (const int bits : options.bits) {
    compare.quantize.push_back(fmt::format("affine{}-g{}", bits, options.group_size));
  }
  return compare;
}

DemoResult RunDemo(const DemoOptions& options) {
  if (options.work_dir.empty()) Fail("demo", "no work directory given");
  if (options.ctx_len < 2 || options.n_seqs < 1 || options.top_k < 1 || options.chunk_size < 1) {
    Fail("demo", "need ctx_len >= 2, n_seqs >= 1, top_k >= 1, chunk >= 1 (got {}, {}, {}, {})",
         options.ctx_len, options.n_seqs, options.top_k, options.chunk_size);
  }
  const std::vector<EmbeddedText> texts = DemoTexts();
  if (texts.empty()) Fail("demo", "no embedded texts (the build found no docs/*.md)");
  DemoResult result;
  const double start = MonotonicSeconds();
  std::string teacher = options.model;
  CompareOptions compare = DemoCompareOptions(options, teacher);
  if (teacher.empty()) {
    std::vector<std::string_view> training;
    training.reserve(texts.size());
    for (const auto& t : texts) training.push_back(t.text);
    const DemoTeacherInfo info = WriteDemoTeacher(options.work_dir / "teacher", training);
    teacher = info.dir.string();
    compare.teacher = teacher;
    compare.teacher_note = fmt::format(
        "generated: byte-level BPE trained on the embedded docs, seeded weights fitted to their "
        "bigrams\n   (the bigram table's own perplexity on them: {:.1f})",
        info.bigram_perplexity);
    result.generated_teacher = true;
  }
  result.teacher_seconds = SecondsSince(start);
  result.compare = RunCompare(compare);
  return result;
}

}  // namespace proctor
