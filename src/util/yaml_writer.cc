#include "util/yaml_writer.h"

#include <cctype>
#include <set>
#include <string_view>

namespace proctor {
namespace {

// A key YAML reads back as the same string when plain: a letter, then letters, digits and
// "_-./", and none of YAML 1.1's words for booleans and null (PyYAML reads `yes:` as true).
std::string Key(const std::string& key) {
  static const std::set<std::string> kReserved = {"y",   "n",    "yes",   "no",  "on",
                                                  "off", "true", "false", "null"};
  std::string lower = key;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool plain = !key.empty() && std::isalpha(static_cast<unsigned char>(key[0])) != 0 &&
                     key.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_-./") == std::string::npos &&
                     !kReserved.contains(lower);
  return plain ? key : nlohmann::json(key).dump();
}

bool IsBlock(const nlohmann::ordered_json& v) {
  return (v.is_object() || v.is_array()) && !v.empty();
}

std::string Scalar(const nlohmann::ordered_json& v) {
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();
}

void Write(const nlohmann::ordered_json& v, int indent, std::string* out);

// The items of a block mapping or list, each line starting at `indent`; `first_prefix` replaces
// the indentation of the first line (a list item's "- ").
void WriteBlock(const nlohmann::ordered_json& v, int indent, std::string_view first_prefix,
                std::string* out) {
  bool first = true;
  const std::string pad(static_cast<size_t>(indent), ' ');
  const auto start = [&] {
    out->append(first ? std::string(first_prefix) : pad);
    first = false;
  };
  if (v.is_object()) {
    for (const auto& [key, item] : v.items()) {
      start();
      out->append(Key(key)).append(":");
      if (IsBlock(item)) {
        out->append("\n");
        Write(item, indent + 2, out);
      } else {
        out->append(" ").append(Scalar(item)).append("\n");
      }
    }
    return;
  }
  for (const auto& item : v) {
    start();
    out->append("- ");
    if (IsBlock(item) && item.is_object()) {
      // The mapping's first key on the item's line, the rest under it.
      std::string nested;
      WriteBlock(item, indent + 2, "", &nested);
      out->append(nested);
    } else if (IsBlock(item)) {
      out->append("\n");
      Write(item, indent + 2, out);
    } else {
      out->append(Scalar(item)).append("\n");
    }
  }
}

void Write(const nlohmann::ordered_json& v, int indent, std::string* out) {
  WriteBlock(v, indent, std::string(static_cast<size_t>(indent), ' '), out);
}

}  // namespace

std::string ToYaml(const nlohmann::ordered_json& value) {
  if (!IsBlock(value)) return Scalar(value) + "\n";
  std::string out;
  Write(value, 0, &out);
  return out;
}

}  // namespace proctor
