// libFuzzer target: any bytes as the messages JSON of `proctor chat --messages` (and of a chat
// corpus row), rendered with a template that reads what real chat templates read (roles,
// string and list contents, tool calls and their arguments, tojson). The JSON may be refused
// (proctor::Error); deep nesting and large values must end in an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "text/chat_template.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor;
  static const text::ChatTemplate chat = text::ChatTemplate::Parse(
      "{%- if messages[0].role == 'system' %}<sys>{{ messages[0].content }}</sys>{% endif %}"
      "{%- for m in messages %}<|{{ m.role }}|>"
      "{%- if m.content is string %}{{ m.content|trim }}"
      "{%- elif m.content is iterable %}{% for part in m.content %}"
      "{% if part is mapping %}{{ part.text|default('') }}{% else %}{{ part }}{% endif %}"
      "{% endfor %}{% else %}{{ m.content|tojson }}{% endif %}"
      "{%- for t in m.tool_calls|default([]) %}<call>{{ t.function.name }}"
      "{{ t.function.arguments|tojson }}</call>{% endfor %}"
      "{%- endfor %}{{ messages|length }}{{ messages|string|length }}"
      "{%- if add_generation_prompt %}<|assistant|>{% endif %}",
      "fuzz_chat");
  text::ChatOptions options;
  options.add_generation_prompt = true;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_value_bytes = 1 << 20;
  options.limits.max_built_bytes = 64 << 20;
  options.limits.max_loop_iterations = 100000;
  options.limits.max_render_seconds = 2.0;
  try {
    (void)chat.RenderMessagesJson(std::string_view(reinterpret_cast<const char*>(data), size),
                                  options);
  } catch (const Error&) {
  }
  return 0;
}
