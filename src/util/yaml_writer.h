// JSON values written as block-style YAML (a Kubernetes manifest people read and `kubectl apply`
// takes): mappings as "key: value" lines, lists as "- " items, each nesting indented by two
// spaces; every string double-quoted with JSON's escapes (which YAML's double-quoted scalars
// read the same), numbers, booleans and null as JSON writes them; an empty object `{}`, an empty
// list `[]`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace proctor {

// One YAML document (no "---"), ending in a newline. Keys are written plain when they are a
// letter then letters, digits and "_-./" and not a YAML 1.1 boolean or null word, quoted
// otherwise.
std::string ToYaml(const nlohmann::ordered_json& value);

}  // namespace proctor
