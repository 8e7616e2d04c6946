// `proctor eval TASKS --model MODEL | --endpoint URL`: task evals (eval/tasks/task_eval.h) through
// the local engine or an OpenAI-compatible server; a table on stdout, every item in --outputs,
// the results file with --json.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/clients/engine_client.h"
#include "eval/clients/http_client.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/results_json.h"
#include "eval/runs/run_database.h"
#include "eval/tasks/task_eval.h"
#include "eval/tasks/task_shards.h"
#include "util/error.h"
#include "util/timing.h"

namespace proctor::cli {
namespace {

struct EvalFlags {
  std::string tasks;
  std::string model;
  std::string endpoint;
  std::string endpoint_model;
  int top_logprobs = 20;
  int64_t n = 0;
  uint32_t seed = 42;
  std::string data_dir;
  std::string json;
  std::string outputs;
  bool resume = false;
  bool no_chat = false;
  std::string chat_template;
  std::string tokenizer;
  std::string db;
  bool no_db = false;
  bool no_context_reuse = false;
  bool unsafe_exec = false;
  std::string punkt_dir;
  std::string langdetect_dir;
  std::string reference_logits;
  int64_t kl_seqs = 0;
  std::string shard;  // --shard I/N
  EngineFlags engine;
};

std::filesystem::path DataDir(const EvalFlags& flags) {
  if (!flags.data_dir.empty()) return flags.data_dir;
  if (const char* fixtures = std::getenv("PROCTOR_FIXTURES"); fixtures != nullptr && *fixtures) {
    return fixtures;
  }
  Fail("cli",
       "give --data-dir DIR: the folder holding the task data (mmlu/, gsm8k/, ifeval/, bfcl/, "
       "hellaswag/, arc/, piqa/, winogrande/), or set PROCTOR_FIXTURES");
}

void RunEval(const EvalFlags& flags) {
  const double start = MonotonicSeconds();
  if (flags.model.empty() == flags.endpoint.empty()) {
    Fail("cli",
         "give exactly one of --model MODEL (the local engine) or --endpoint URL (an "
         "OpenAI-compatible server)");
  }
  const TaskSelection selection = ParseTaskSelection(flags.tasks);
  const std::vector<std::string>& names = selection.tasks;
  const bool smoketest = std::any_of(selection.suites.begin(), selection.suites.end(),
                                     [](const TaskSuite& s) { return s.name == "smoketest"; });
  if (!flags.reference_logits.empty() && flags.model.empty()) {
    Fail("cli", "--reference-logits scores the local model: give --model MODEL");
  }
  std::optional<Shard> shard;
  if (!flags.shard.empty()) {
    shard = ParseShard(flags.shard, "--shard");
    if (flags.json.empty()) {
      Fail("cli", "--shard {} writes a partial results file for `proctor merge`: give --json FILE",
           flags.shard);
    }
    if (!flags.outputs.empty() || flags.resume) {
      Fail("cli",
           "--shard keeps its items beside its partial ('{}.outputs.jsonl') and resumes from "
           "them by itself: leave out --outputs and --resume",
           flags.json);
    }
    if (!flags.reference_logits.empty()) {
      Fail("cli",
           "--shard does not go with --reference-logits: shard the KL with `proctor kl "
           "--reference-logits DIR --shard I/N`");
    }
  }
  const RuntimeOptions runtime_options = flags.engine.Options();
  nlohmann::ordered_json settings = {
      {"tasks", names}, {"n", flags.n}, {"seed", flags.seed}, {"chat", !flags.no_chat}};
  if (!flags.punkt_dir.empty()) settings["punkt_dir"] = flags.punkt_dir;
  if (!flags.langdetect_dir.empty()) settings["langdetect_dir"] = flags.langdetect_dir;
  if (!flags.reference_logits.empty()) {
    settings["reference_logits"] = flags.reference_logits;
    settings["kl_seqs"] = flags.kl_seqs;
  }
  if (!flags.model.empty()) {
    settings["model"] = flags.model;
    settings["compute"] = flags.engine.compute;
    settings["kv"] = flags.engine.kv;
    if (!flags.engine.kv_k.empty()) settings["kv_k"] = flags.engine.kv_k;
    if (!flags.engine.kv_v.empty()) settings["kv_v"] = flags.engine.kv_v;
    if (runtime_options.kv.quantized()) settings["kv_start"] = runtime_options.kv.start;
    if (!flags.chat_template.empty()) settings["chat_template"] = flags.chat_template;
    if (!flags.tokenizer.empty()) settings["tokenizer"] = flags.tokenizer;
  } else {
    settings["endpoint"] = flags.endpoint;
    if (!flags.endpoint_model.empty()) settings["endpoint_model"] = flags.endpoint_model;
    settings["top_logprobs"] = flags.top_logprobs;
  }
  TaskRunOptions run_options{.outputs = flags.outputs,
                             .resume = flags.resume,
                             .run_settings = settings,
                             .quiet = Globals().quiet,
                             .shard = shard};
  if (shard) {
    if (TaskShardDone(flags.json, *shard, settings)) {
      fmt::print("Shard {} already done: '{}' holds it; not run again\n", shard->Name(),
                 flags.json);
      return;
    }
    // A shard's items, beside its partial; an interrupted shard continues them.
    run_options.outputs = flags.json + ".outputs.jsonl";
    run_options.resume = std::filesystem::exists(run_options.outputs);
    run_options.run_settings["shard"] = shard->Name();
  }
  CheckOutputsFile(run_options);
  const std::filesystem::path data_dir = DataDir(flags);
  std::optional<RunDatabase> database;
  if (!flags.no_db && !shard) {  // a shard is part of a run: the merge records the whole
    database = RunDatabase::Open(flags.db.empty() ? DefaultRunDatabasePath()
                                                  : std::filesystem::path(flags.db));
  }

  double load_seconds = 0;
  std::unique_ptr<CompletionClient> client;
  std::shared_ptr<const EvalModel> model;
  {
    ScopedSeconds timer(&load_seconds);
    if (!flags.model.empty()) {
      model = EvalModel::Open(flags.model, flags.tokenizer);
      auto engine = std::make_unique<EngineClient>(model, runtime_options, flags.engine.chunk,
                                                   flags.chat_template);
      engine->set_context_reuse(!flags.no_context_reuse);
      client = std::move(engine);
    } else {
      client = std::make_unique<HttpCompletionClient>(
          HttpClientOptions{.endpoint = flags.endpoint,
                            .model = flags.endpoint_model,
                            .top_logprobs = flags.top_logprobs});
    }
  }
  const std::vector<std::unique_ptr<Task>> tasks =
      MakeTasks(names, {.data_dir = data_dir,
                        .n = flags.n,
                        .seed = flags.seed,
                        .chat = !flags.no_chat && client->CanChat(),
                        .smoketest = smoketest,
                        .tools = client->CanUseTools(),
                        .unsafe_exec = flags.unsafe_exec,
                        .punkt_dir = flags.punkt_dir,
                        .langdetect_dir = flags.langdetect_dir});
  nlohmann::ordered_json kl;
  if (!flags.reference_logits.empty()) {
    KlEvalOptions kl_options;
    kl_options.reference_dir = flags.reference_logits;
    kl_options.candidate = flags.model;
    kl_options.max_seqs = flags.kl_seqs;
    kl_options.chunk_size = flags.engine.chunk;
    kl_options.forward = model->Forward(runtime_options);
    kl_options.runtime = runtime_options;
    kl_options.quiet = Globals().quiet;
    const KlEvalResult kl_result = EvaluateKlVsReferenceLogits(kl_options);
    fmt::print("{}\n", FormatKlTable({kl_result}));
    kl = KlEvalResultToJson(kl_result);
  }
  TaskEvalResult result = RunTaskEval(tasks, *client, run_options);
  result.kl = std::move(kl);
  result.suites = ScoreSuites(selection.suites, result.scores);
  result.timings.load_seconds = load_seconds;
  result.timings.total_seconds = SecondsSince(start);
  fmt::print("{}", FormatTaskTable(result.scores));
  const nlohmann::ordered_json description =
      model && (database || !flags.json.empty() || !selection.suites.empty())
          ? model->Describe("model")
          : nlohmann::ordered_json();
  fmt::print("{}", FormatSuiteScores(result.suites, ModelIdentity(description).second));
  if (database) {
    std::vector<int64_t> ids;
    for (const RunRecord& record :
         TaskEvalRunRecords(result, model ? flags.model : flags.endpoint, description, settings)) {
      ids.push_back(database->Insert(record));
    }
    if (!Globals().quiet) {
      fmt::print(stderr, "recorded as run {} in {} (proctor runs list)\n", fmt::join(ids, ", "),
                 database->path().string());
    }
  }
  if (flags.json.empty()) return;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  if (model) {
    inputs.push_back(description);
  } else {
    inputs.push_back({{"role", "endpoint"}, {"kind", "http"}, {"url", flags.endpoint}});
  }
  for (auto& input : DescribeTaskInputs(names, data_dir)) inputs.push_back(std::move(input));
  ResultsEnvelope envelope = TaskEvalEnvelope(result, std::move(inputs), settings);
  if (shard) {
    envelope.results["shard"] = TaskShardToJson(*shard, tasks, result.scores);
    fmt::print("Shard {}: items kept in '{}'\n", shard->Name(), run_options.outputs.string());
  }
  WriteResultsJson(flags.json, envelope);
  if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", flags.json);
}

}  // namespace

void RegisterEvalVerb(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  auto* verb = app.add_subcommand(
      "eval",
      "Task evals: does the model still do the job? Accuracy ± standard error per task, every "
      "item kept.\n"
      "Example: proctor eval mmlu,gsm8k --model Qwen3-0.6B-4bit/ --n 200 --data-dir data/ "
      "--outputs items.jsonl --json eval.json\n"
      "         proctor eval gsm8k --endpoint http://127.0.0.1:8080 --n 50 --data-dir data/");
  verb->add_option("tasks", flags->tasks,
                   "Comma-separated tasks: mmlu (5-shot, next-token letter choice), gsm8k "
                   "(3-shot, chat, greedy 256 tokens), ifeval (541 prompts, chat, 512 tokens, "
                   "strict and loose instruction checks), hashhop (hash chains, 1-4 hops), bfcl "
                   "(v3 simple function calls, AST-matched), humaneval (pass@1, run in a "
                   "sandbox), hellaswag, arc-easy, arc-challenge, piqa, winogrande (0-shot "
                   "log-likelihood: acc, acc_norm); or a suite: capability (gsm8k, mmlu, ifeval, "
                   "bfcl, humaneval, hashhop and their mean), smoketest "
                   "(gsm8k on 50 items, with the KL of --reference-logits)")
      ->required();
  verb->add_option("--model", flags->model,
                   "Run the local engine: model directory, .gguf file or cached HF id");
  verb->add_option("--endpoint", flags->endpoint,
                   "Ask an OpenAI-compatible server instead, e.g. http://127.0.0.1:8080");
  verb->add_option("--endpoint-model", flags->endpoint_model,
                   "The \"model\" field of each request to --endpoint (default: omitted)");
  verb->add_option("--top-logprobs", flags->top_logprobs,
                   "With --endpoint: next tokens asked for by a letter-choice task (default 20); "
                   "a choice the server does not list cannot win")
      ->check(CLI::Range(1, 1000));
  verb->add_option("--n", flags->n,
                   "Items per task (default 0: all), sampled as each task "
                   "documents")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--seed", flags->seed, "Sampling seed (default 42)");
  verb->add_option("--data-dir", flags->data_dir,
                   "Folder with the task data: mmlu/{dev,test}/*.csv, gsm8k/test.jsonl, "
                   "ifeval/input_data.jsonl, bfcl/, "
                   "hellaswag/, arc/, piqa/, winogrande/ in their original layouts (default: "
                   "$PROCTOR_FIXTURES)");
  verb->add_option("--outputs", flags->outputs,
                   "JSONL file of every item (prompt, completion, extracted answer, outcome), "
                   "written as the run goes");
  verb->add_flag("--resume", flags->resume,
                 "Continue the run recorded in --outputs: its items are not asked again");
  verb->add_flag("--no-chat", flags->no_chat,
                 "Chat tasks use their raw-text form even when the model has a chat template");
  verb->add_option("--chat-template", flags->chat_template,
                   "With --model: a Jinja file to use as the chat template (instead of the "
                   "model's own, or for a model without one)");
  verb->add_option("--tokenizer", flags->tokenizer,
                   "With --model: a tokenizer instead of the model's (folder, tokenizer.json or "
                   ".gguf), for a model written without one; its chat template too when the "
                   "model has none");
  verb->add_option("--db", flags->db,
                   "The run database every run is recorded in (default: "
                   "~/.cache/proctor/runs.sqlite; see `proctor runs`)");
  verb->add_flag("--no-db", flags->no_db, "Do not record this run in the run database");
  verb->add_option("--reference-logits", flags->reference_logits,
                   "With --model: also score the model against this teacher dump (`proctor dump`) "
                   "first: KL, top-1, mass, as `proctor kl` (kept in the run database)");
  verb->add_option("--kl-seqs", flags->kl_seqs,
                   "With --reference-logits: score the first N sequences (default 0: all)")
      ->check(CLI::NonNegativeNumber);
  verb->add_flag("--unsafe-exec", flags->unsafe_exec,
                 "humaneval: run model-written programs WITHOUT the bubblewrap sandbox (only where "
                 "the sandbox cannot work, and at your own risk)");
  verb->add_option("--punkt-dir", flags->punkt_dir,
                   "ifeval: nltk's punkt_tab/english folder, which lm-eval counts sentences with "
                   "(default: where nltk keeps it, $NLTK_DATA or ~/nltk_data; without it Punkt "
                   "runs untrained and the run says so)")
      ->check(CLI::ExistingDirectory);
  verb->add_option("--langdetect-dir", flags->langdetect_dir,
                   "ifeval: the langdetect package folder with profiles/ (default: Debian's "
                   "python3-langdetect)")
      ->check(CLI::ExistingDirectory);
  verb->add_flag("--no-context-reuse", flags->no_context_reuse,
                 "With --model: evaluate every prompt from its first token (MMLU's shared 5-shot "
                 "prefix and a multiple-choice item's shared context are otherwise evaluated "
                 "once); for measuring what the reuse saves");
  verb->add_option("--json", flags->json, "Also write the results JSON to this file");
  verb->add_option("--shard", flags->shard,
                   "I/N: with --json FILE, run only shard I of N (0-based) of each task's items, "
                   "a contiguous share, into a partial results file for `proctor merge` (the "
                   "items in FILE.outputs.jsonl; not recorded in the run database, the merge "
                   "is); rerun, a finished shard is kept and an interrupted one continues");
  flags->engine.Add(*verb);
  verb->callback([flags] {
    if (flags->resume && flags->outputs.empty()) Fail("cli", "--resume needs --outputs FILE");
    if (!flags->tokenizer.empty() && flags->model.empty()) {
      Fail("cli", "--tokenizer goes with --model (an --endpoint tokenizes for itself)");
    }
    if (flags->no_db && !flags->db.empty()) Fail("cli", "--db and --no-db contradict each other");
    if (!flags->chat_template.empty() && flags->model.empty()) {
      Fail("cli", "--chat-template applies to --model (a server renders its own template)");
    }
    RunEval(*flags);
  });
}

}  // namespace proctor::cli
