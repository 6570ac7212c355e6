// See yaml_reader.h.
#include "launcher/spec/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <sstream>

#include "launcher/base/error.h"

namespace podrun {

bool ParseInt(const std::string& text, int* out) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end && begin != end;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) parts.push_back(Trim(part));
  if (!s.empty() && s.back() == ',') parts.push_back("");
  return parts;
}

void YamlReader::Fail(const YAML::Mark& mark, const std::string& message) const {
  if (mark.is_null() || mark.line < 0) {
    throw UsageError(file_ + ":1:1: " + message);
  }
  std::string out = file_ + ":" + std::to_string(mark.line + 1) + ":" +
                    std::to_string(mark.column + 1) + ": " + message;
  std::string line = SourceLine(mark.line);
  if (!line.empty() || mark.column == 0) {
    std::string caret;
    for (int i = 0; i < mark.column && i < static_cast<int>(line.size()); ++i) {
      caret += line[i] == '\t' ? '\t' : ' ';
    }
    out += "\n  " + line + "\n  " + caret + "^";
  }
  throw UsageError(out);
}

std::string YamlReader::SourceLine(int line_index) const {
  std::stringstream in(text_);
  std::string line;
  for (int i = 0; std::getline(in, line); ++i) {
    if (i == line_index) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
  }
  return "";
}

YAML::Mark YamlReader::At(const YAML::Node& key, const YAML::Node& value) {
  return value.IsNull() ? key.Mark() : value.Mark();
}

YAML::Mark YamlReader::FindKeyMark(const YAML::Node& map, const std::string& name) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == name) return it->first.Mark();
  }
  return map.Mark();
}

std::string YamlReader::KeyName(const YAML::Node& key, std::set<std::string>* seen) const {
  if (!key.IsScalar()) Fail(key.Mark(), "a key must be a plain name");
  std::string name = key.Scalar();
  if (!seen->insert(name).second) Fail(key.Mark(), "duplicate key '" + name + "'");
  return name;
}

void YamlReader::WrongType(const YAML::Node& key, const YAML::Node& value,
                           const std::string& expected) const {
  std::string got = value.IsNull()       ? "nothing"
                    : value.IsScalar()   ? "'" + value.Scalar() + "'"
                    : value.IsSequence() ? "a list"
                    : value.IsMap()      ? "a mapping"
                                         : "something else";
  Fail(At(key, value), "'" + key.Scalar() + "': expected " + expected + ", got " + got);
}

std::string YamlReader::Scalar(const YAML::Node& key, const YAML::Node& value,
                               const std::string& expected) const {
  if (!value.IsScalar()) WrongType(key, value, expected);
  return value.Scalar();
}

std::string YamlReader::String(const YAML::Node& key, const YAML::Node& value) const {
  return Scalar(key, value, "a string");
}

std::string YamlReader::NonEmptyString(const YAML::Node& key, const YAML::Node& value) const {
  std::string s = String(key, value);
  if (Trim(s).empty()) Fail(At(key, value), "'" + key.Scalar() + "' must not be empty");
  return s;
}

int YamlReader::Int(const YAML::Node& key, const YAML::Node& value, int min, int max) const {
  std::string text = Scalar(key, value, "an integer");
  int number = 0;
  if (!ParseInt(text, &number)) {
    Fail(At(key, value), "'" + key.Scalar() + "': expected an integer, got '" + text + "'");
  }
  if (number < min || number > max) {
    std::string range = max >= 1000000 ? ">= " + std::to_string(min)
                                       : std::to_string(min) + ".." + std::to_string(max);
    Fail(At(key, value), "'" + key.Scalar() + "': " + text + " is out of range (" + range + ")");
  }
  return number;
}

bool YamlReader::Bool(const YAML::Node& key, const YAML::Node& value) const {
  std::string text = Scalar(key, value, "true or false");
  std::string l = Lower(text);
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  Fail(At(key, value), "'" + key.Scalar() + "': expected true or false, got '" + text + "'");
}

std::vector<std::pair<std::string, YAML::Mark>> YamlReader::List(const YAML::Node& key,
                                                                 const YAML::Node& value,
                                                                 bool allow_comma_string) const {
  std::vector<std::pair<std::string, YAML::Mark>> out;
  if (value.IsNull()) return out;
  if (value.IsScalar() && allow_comma_string) {
    for (const std::string& part : SplitCommas(value.Scalar())) {
      out.emplace_back(part, value.Mark());
    }
    return out;
  }
  if (!value.IsSequence()) WrongType(key, value, "a list");
  for (const YAML::Node& item : value) {
    if (!item.IsScalar()) {
      Fail(item.Mark(), "'" + key.Scalar() + "': each entry must be a string");
    }
    out.emplace_back(Trim(item.Scalar()), item.Mark());
  }
  return out;
}

}  // namespace podrun
