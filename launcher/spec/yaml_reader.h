// YamlReader: typed reading of a YAML document whose every error names the file, line and
// column, shows the line and puts a caret under the problem (Ninja style), then throws
// Error(kUsage); and tables of a mapping's keys, each with the reader of its value. The spec's
// schema (spec.cc, pod_section.cc, mounts_section.cc) is written on top of it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/edit_distance.h"

namespace podrun {

// "12" -> 12; false for anything but a whole decimal int.
bool ParseInt(const std::string& text, int* out);
std::string Lower(std::string s);
std::string Trim(const std::string& s);
// "a, b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitCommas(const std::string& s);

class YamlReader {
 public:
  // Both must outlive the reader.
  YamlReader(const std::string& text, const std::string& file_name)
      : text_(text), file_(file_name) {}

  // Throws Error(kUsage): "file:line:col: message", the line, and a caret under the column.
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& message) const;

  // The mark of a value, or of its key when the value is empty (an empty value's mark points
  // past the key's line).
  static YAML::Mark At(const YAML::Node& key, const YAML::Node& value);
  // The mark of key `name` in `map`, else the map's.
  static YAML::Mark FindKeyMark(const YAML::Node& map, const std::string& name);

  // A key's name, failing on a non-scalar key or one already in `seen`.
  std::string KeyName(const YAML::Node& key, std::set<std::string>* seen) const;
  // Fails with "unknown key", suggesting the closest of `known`.
  template <typename Range>
  [[noreturn]] void UnknownKey(const YAML::Node& key, const std::string& name,
                               const Range& known) const {
    std::string message = "unknown key '" + name + "'";
    std::string suggestion = Closest(name, known);
    if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
    Fail(key.Mark(), message);
  }
  [[noreturn]] void WrongType(const YAML::Node& key, const YAML::Node& value,
                              const std::string& expected) const;

  // Typed values; each fails naming the key, what was expected and what was found.
  std::string Scalar(const YAML::Node& key, const YAML::Node& value,
                     const std::string& expected) const;
  std::string String(const YAML::Node& key, const YAML::Node& value) const;
  std::string NonEmptyString(const YAML::Node& key, const YAML::Node& value) const;
  int Int(const YAML::Node& key, const YAML::Node& value, int min, int max) const;
  bool Bool(const YAML::Node& key, const YAML::Node& value) const;
  // A YAML list of scalars, or (when `allow_comma_string`) one comma-separated string.
  // Returns each entry with the mark that points at it.
  std::vector<std::pair<std::string, YAML::Mark>> List(const YAML::Node& key,
                                                       const YAML::Node& value,
                                                       bool allow_comma_string) const;

 protected:
  const std::string& text() const { return text_; }
  const std::string& file() const { return file_; }

 private:
  std::string SourceLine(int line_index) const;

  const std::string& text_;
  const std::string& file_;
};

// One key of a mapping and the function that reads its value into a Target. A table of these
// (a C array) lists a mapping's keys once: for reading them, and for "did you mean".
template <typename Target>
struct KeyReader {
  std::string_view name;
  void (*read)(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
               Target* target);
};

// The entry of `table` named `name`, else nullptr.
template <typename Target, size_t N>
const KeyReader<Target>* FindKey(const KeyReader<Target> (&table)[N], std::string_view name) {
  for (const KeyReader<Target>& entry : table) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// The names in `table`, in its order (the order in which UnknownKey prefers equally close ones).
// (A vector, not a view: clang 14, which builds the fuzz targets, cannot take libstdc++ 12's
// views over these tables.)
template <typename Target, size_t N>
std::vector<std::string_view> KeyNames(const KeyReader<Target> (&table)[N]) {
  std::vector<std::string_view> names;
  names.reserve(N);
  for (const KeyReader<Target>& entry : table) names.push_back(entry.name);
  return names;
}

// The struct a pointer to member belongs to: MemberOwner<&PodSettings::port> is PodSettings.
template <typename Pointer>
struct MemberOwnerOf;
template <typename Owner, typename Field>
struct MemberOwnerOf<Field Owner::*> {
  using type = Owner;
};
template <auto kField>
using MemberOwner = typename MemberOwnerOf<decltype(kField)>::type;

// Readers for a KeyReader table that store one typed value (YamlReader's Int, Bool,
// NonEmptyString) in the field kField.
template <auto kField, int kMin, int kMax>
void ReadIntField(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                  MemberOwner<kField>* target) {
  target->*kField = yaml.Int(key, value, kMin, kMax);
}
template <auto kField>
void ReadBoolField(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                   MemberOwner<kField>* target) {
  target->*kField = yaml.Bool(key, value);
}
template <auto kField>
void ReadNonEmptyStringField(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                             MemberOwner<kField>* target) {
  target->*kField = yaml.NonEmptyString(key, value);
}

}  // namespace podrun
