// gitignore rules: parsing as git's dir.c (add_patterns_from_buffer, parse_path_pattern),
// matching as its last_matching_pattern_from_list and wildmatch.c (WM_PATHNAME, no case folding).
#include "launcher/sync/ignore_rules.h"

#include <cctype>
#include <cstring>
#include <utility>

namespace podrun {
namespace {

using uchar = unsigned char;

// Results of DoWild: kAbortAll and kAbortToStarStar cut the backtracking short.
constexpr int kMatch = 0;
constexpr int kNoMatch = 1;
constexpr int kAbortAll = -1;
constexpr int kAbortToStarStar = -2;

bool IsGlobSpecial(uchar c) { return c == '*' || c == '?' || c == '[' || c == '\\'; }

// Length of the leading part of `p` without glob specials.
size_t LiteralLength(std::string_view p) {
  size_t i = 0;
  while (i < p.size() && !IsGlobSpecial(p[i])) ++i;
  return i;
}

// Matches a [:name:] class; -1 for an unknown name (a malformed pattern).
int MatchesClass(std::string_view name, uchar c) {
  if (name == "alnum") return std::isalnum(c) != 0;
  if (name == "alpha") return std::isalpha(c) != 0;
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c) != 0;
  if (name == "digit") return std::isdigit(c) != 0;
  if (name == "graph") return std::isgraph(c) != 0;
  if (name == "lower") return std::islower(c) != 0;
  if (name == "print") return std::isprint(c) != 0;
  if (name == "punct") return std::ispunct(c) != 0;
  if (name == "space") return std::isspace(c) != 0;
  if (name == "upper") return std::isupper(c) != 0;
  if (name == "xdigit") return std::isxdigit(c) != 0;
  return -1;
}

// git's dowild() with WM_PATHNAME; `pattern` is where the whole pattern starts (for `**`).
// Both strings are NUL-terminated.
int DoWild(const uchar* p, const uchar* text, const uchar* pattern) {
  for (uchar p_ch; (p_ch = *p) != '\0'; ++text, ++p) {
    uchar t_ch = *text;
    if (t_ch == '\0' && p_ch != '*') return kAbortAll;
    switch (p_ch) {
      case '\\':
        p_ch = *++p;  // a literal match of the next character ('\0' fails below)
        [[fallthrough]];
      default:
        if (t_ch != p_ch) return kNoMatch;
        continue;
      case '?':
        if (t_ch == '/') return kNoMatch;
        continue;
      case '*': {
        bool match_slash = false;
        if (*++p == '*') {
          const uchar* prev_p = p - 2;
          while (*++p == '*') {
          }
          if ((prev_p < pattern || *prev_p == '/') &&
              (*p == '\0' || *p == '/' || (p[0] == '\\' && p[1] == '/'))) {
            // "**/" may match no directory at all: try the rest right here first.
            if (p[0] == '/' && DoWild(p + 1, text, pattern) == kMatch) return kMatch;
            match_slash = true;
          }
        }
        if (*p == '\0') {
          // A trailing "**" matches everything, a trailing "*" the rest of this component.
          if (!match_slash && std::strchr(reinterpret_cast<const char*>(text), '/')) {
            return kNoMatch;
          }
          return kMatch;
        }
        if (!match_slash && *p == '/') {
          // "*/": the rest of this component, then the slash.
          const char* slash = std::strchr(reinterpret_cast<const char*>(text), '/');
          if (slash == nullptr) return kNoMatch;
          text = reinterpret_cast<const uchar*>(slash);
          break;  // the loop's increments consume the slash of both
        }
        while (true) {
          if (t_ch == '\0') break;
          // A literal after the star: skip ahead to its next occurrence.
          if (!IsGlobSpecial(*p)) {
            p_ch = *p;
            while ((t_ch = *text) != '\0' && (match_slash || t_ch != '/')) {
              if (t_ch == p_ch) break;
              ++text;
            }
            if (t_ch != p_ch) return match_slash ? kAbortAll : kAbortToStarStar;
          }
          int matched = DoWild(p, text, pattern);
          if (matched != kNoMatch) {
            if (!match_slash || matched != kAbortToStarStar) return matched;
          } else if (!match_slash && t_ch == '/') {
            return kAbortToStarStar;
          }
          t_ch = *++text;
        }
        return kAbortAll;
      }
      case '[': {
        p_ch = *++p;
        bool negated = p_ch == '!' || p_ch == '^';
        if (negated) p_ch = *++p;
        uchar prev_ch = 0;
        bool matched = false;
        do {
          if (p_ch == '\0') return kAbortAll;
          if (p_ch == '\\') {
            p_ch = *++p;
            if (p_ch == '\0') return kAbortAll;
            if (t_ch == p_ch) matched = true;
          } else if (p_ch == '-' && prev_ch && p[1] && p[1] != ']') {
            p_ch = *++p;
            if (p_ch == '\\') {
              p_ch = *++p;
              if (p_ch == '\0') return kAbortAll;
            }
            if (t_ch <= p_ch && t_ch >= prev_ch) matched = true;
            p_ch = 0;  // a range cannot start right after a range
          } else if (p_ch == '[' && p[1] == ':') {
            const uchar* s = p += 2;
            while ((p_ch = *p) != '\0' && p_ch != ']') ++p;
            if (p_ch == '\0') return kAbortAll;
            if (p - s - 1 < 0 || p[-1] != ':') {
              // No ":]": the '[' is an ordinary member.
              p = s - 2;
              p_ch = '[';
              if (t_ch == p_ch) matched = true;
              continue;
            }
            int in_class =
                MatchesClass(std::string_view(reinterpret_cast<const char*>(s), p - s - 1), t_ch);
            if (in_class < 0) return kAbortAll;
            if (in_class) matched = true;
            p_ch = 0;
          } else if (t_ch == p_ch) {
            matched = true;
          }
        } while (prev_ch = p_ch, (p_ch = *++p) != ']');
        if (matched == negated || t_ch == '/') return kNoMatch;
        continue;
      }
    }
  }
  return *text ? kNoMatch : kMatch;
}

int Wild(const char* pattern, const char* text) {
  const auto* p = reinterpret_cast<const uchar*>(pattern);
  return DoWild(p, reinterpret_cast<const uchar*>(text), p);
}

// git's trim_trailing_spaces: unescaped trailing spaces go.
void TrimTrailingSpaces(std::string* line) {
  size_t last_space = std::string::npos;
  for (size_t i = 0; i < line->size(); ++i) {
    char c = (*line)[i];
    if (c == ' ') {
      if (last_space == std::string::npos) last_space = i;
    } else if (c == '\\' && ++i == line->size()) {
      return;
    } else {
      last_space = std::string::npos;
    }
  }
  if (last_space != std::string::npos) line->resize(last_space);
}

}  // namespace

bool WildMatch(std::string_view pattern, std::string_view text) {
  return Wild(std::string(pattern).c_str(), std::string(text).c_str()) == kMatch;
}

void IgnoreRules::ParseInto(std::string_view contents, std::vector<Rule>* rules) {
  if (contents.starts_with("\xEF\xBB\xBF")) contents.remove_prefix(3);  // a UTF-8 BOM
  while (!contents.empty()) {
    size_t eol = contents.find('\n');
    std::string line(contents.substr(0, eol));
    contents.remove_prefix(eol == std::string_view::npos ? contents.size() : eol + 1);
    if (line.ends_with('\r')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    TrimTrailingSpaces(&line);
    Rule rule;
    std::string_view p = line;
    if (p.starts_with('!')) {
      rule.negated = true;
      p.remove_prefix(1);
    }
    if (p.ends_with('/')) {
      rule.dir_only = true;
      p.remove_suffix(1);
    }
    if (p.empty()) continue;  // matches nothing
    rule.basename = p.find('/') == std::string_view::npos;
    rule.ends_with = p[0] == '*' && LiteralLength(p.substr(1)) == p.size() - 1;
    if (p[0] == '/') p.remove_prefix(1);  // anchored anyway: it has a '/'
    rule.pattern = std::string(p);
    rule.literal_prefix = LiteralLength(p);
    rules->push_back(std::move(rule));
  }
}

void IgnoreRules::Push(std::string dir, const std::vector<std::string>& file_contents) {
  Level level{std::move(dir), {}};
  for (const std::string& contents : file_contents) ParseInto(contents, &level.rules);
  levels_.push_back(std::move(level));
}

void IgnoreRules::Pop() {
  if (!levels_.empty()) levels_.pop_back();
}

bool IgnoreRules::Matches(const Rule& rule, std::string_view relative, std::string_view name) {
  const std::string& pattern = rule.pattern;
  if (rule.basename) {
    if (rule.literal_prefix == pattern.size()) return name == pattern;
    if (rule.ends_with) return name.ends_with(std::string_view(pattern).substr(1));
    return Wild(pattern.c_str(), name.data()) == kMatch;
  }
  size_t prefix = rule.literal_prefix;
  if (prefix > relative.size() || relative.compare(0, prefix, pattern, 0, prefix) != 0) {
    return false;
  }
  if (prefix == pattern.size() && prefix == relative.size()) return true;
  return Wild(pattern.c_str() + prefix, relative.data() + prefix) == kMatch;
}

bool IgnoreRules::Ignored(std::string_view relative_path, bool is_dir) const {
  // A NUL-terminated copy: every suffix of it (a relative path, the name) is a C string.
  const std::string path(relative_path);
  size_t slash = path.rfind('/');
  std::string_view name = std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  if (name == ".git") return true;
  for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
    std::string_view relative = path;
    if (!level->dir.empty()) {
      if (relative.size() <= level->dir.size() || !relative.starts_with(level->dir) ||
          relative[level->dir.size()] != '/') {
        continue;  // not below this directory
      }
      relative.remove_prefix(level->dir.size() + 1);
    }
    for (auto rule = level->rules.rbegin(); rule != level->rules.rend(); ++rule) {
      if (rule->dir_only && !is_dir) continue;
      if (Matches(*rule, relative, name)) return !rule->negated;
    }
  }
  return false;
}

}  // namespace podrun
