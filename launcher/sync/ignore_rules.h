// Which files of a synced tree are left out: the rules of the `.gitignore` and `.podrunignore`
// files found in its directories, with gitignore semantics (`man gitignore`, as
// `git check-ignore` applies them). `.git` is always left out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podrun {

// The names of the ignore files of a directory, in the order their rules are read (a later rule
// wins, so `.podrunignore` can override `.gitignore`).
inline constexpr std::string_view kIgnoreFileNames[] = {".gitignore", ".podrunignore"};

// A stack of per-directory rule sets that follows a walk of the tree: Push on entering a
// directory, Pop on leaving it. Paths are relative to the tree's root, '/'-separated.
//
// Ignored() looks at the path itself only, not at its parents: as in git, a file inside an
// ignored directory cannot be re-included, which holds when the walker does not descend into a
// directory Ignored() excludes.
class IgnoreRules {
 public:
  // Enters `dir` ("" for the root, else e.g. "src/lib"), whose ignore files hold
  // `file_contents` (in kIgnoreFileNames order; missing files may be left out). Its rules apply
  // to the paths below `dir`, matched relative to it.
  void Push(std::string dir, const std::vector<std::string>& file_contents);
  // Leaves the directory of the last Push.
  void Pop();
  size_t depth() const { return levels_.size(); }

  // Whether `relative_path` (a file or, with is_dir, a directory below the last pushed
  // directory) is excluded: the last matching rule of the deepest directory that has one
  // decides; a negated (`!`) rule re-includes.
  bool Ignored(std::string_view relative_path, bool is_dir) const;

 private:
  struct Rule {
    std::string pattern;        // without the `!`, a leading `/` and the trailing `/`
    size_t literal_prefix = 0;  // how many leading chars of pattern have no glob specials
    bool negated = false;
    bool dir_only = false;   // had a trailing `/`
    bool basename = false;   // had no `/` otherwise: matches the name at any depth
    bool ends_with = false;  // "*literal": a suffix comparison suffices
  };
  struct Level {
    std::string dir;
    std::vector<Rule> rules;
  };

  static void ParseInto(std::string_view contents, std::vector<Rule>* rules);
  static bool Matches(const Rule& rule, std::string_view relative, std::string_view name);

  std::vector<Level> levels_;
};

// Glob matching as git's wildmatch with WM_PATHNAME: `*`, `?` and `[...]` do not match '/',
// `**/`, `/**/` and `/**` match across directories, `\` escapes. Exposed for tests.
bool WildMatch(std::string_view pattern, std::string_view text);

}  // namespace podrun
