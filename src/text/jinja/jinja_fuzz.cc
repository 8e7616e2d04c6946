// libFuzzer target: any bytes as a template, rendered against a small chat context with tight
// bounds. A template may fail (proctor::Error); it must never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "text/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor::jinja;
  static const Dict context = [] {
    Dict d;
    const auto json = nlohmann::ordered_json::parse(R"({
      "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                   {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f",
                    "arguments": {"a": 1.5}}}]}, {"role": "tool", "content": "ok"}],
      "tools": [{"type": "function", "function": {"name": "f"}}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
    for (const auto& [k, v] : json.items()) d.Set(k, FromJson(v));
    return d;
  }();
  RenderOptions options;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_value_bytes = 1 << 20;
  options.limits.max_built_bytes = 64 << 20;
  options.limits.max_render_seconds = 2.0;
  options.limits.max_loop_iterations = 100000;
  options.limits.max_call_depth = 50;
  try {
    const Template t =
        Template::Parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    t.Render(context, options);
  } catch (const proctor::Error&) {
  }
  return 0;
}
