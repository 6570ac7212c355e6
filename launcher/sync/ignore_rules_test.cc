// Tests of the gitignore rules: each syntax feature on a table of scenarios, which is also
// checked against the real `git check-ignore` (when git is installed).
#include "launcher/sync/ignore_rules.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "proto/run_program.h"

namespace podrun {
namespace {

// Ignore files by directory ("" the root): the .gitignore and, optionally, the .podrunignore.
struct IgnoreFiles {
  IgnoreFiles(std::string git, std::string podrun = "")
      : gitignore(std::move(git)), podrunignore(std::move(podrun)) {}
  std::string gitignore;
  std::string podrunignore;
};
using Tree = std::map<std::string, IgnoreFiles>;

// Whether the walker would leave `query` out ("dir/" for a directory): like the walker, it
// pushes each parent's rules and stops at an ignored parent.
bool WalkIgnored(const Tree& tree, const std::string& query) {
  const bool is_dir = query.ends_with('/');
  const std::string path = is_dir ? query.substr(0, query.size() - 1) : query;
  auto files_of = [&tree](const std::string& dir) {
    auto it = tree.find(dir);
    if (it == tree.end()) return std::vector<std::string>{};
    return std::vector<std::string>{it->second.gitignore, it->second.podrunignore};
  };
  IgnoreRules rules;
  rules.Push("", files_of(""));
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (rules.Ignored(dir, /*is_dir=*/true)) return true;
    rules.Push(dir, files_of(dir));
  }
  return rules.Ignored(path, is_dir);
}

struct Scenario {
  const char* name;
  Tree tree;
  std::vector<std::string> ignored;  // "x/" is a directory
  std::vector<std::string> kept;
};

// Every scenario here is verified against git 2.39's check-ignore (GitAgrees below).
const std::vector<Scenario>& Scenarios() {
  static const auto* scenarios = new std::vector<Scenario>{
      {"comments and blank lines",
       {{"", {"# comment\n\n   \n*.o\n"}}},
       {"a.o", "src/b.o"},
       {"# comment", "a.c", "src/o"}},
      {"escapes and trailing spaces",
       {{"", {"\\#hash\n\\!bang\nspace\\ \ntrail   \n"}}},
       {"#hash", "!bang", "space ", "trail"},
       {"hash", "bang", "space", "trail "}},
      {"crlf lines", {{"", {"a.txt\r\nb.txt\r\n"}}}, {"a.txt", "b.txt"}, {"c.txt"}},
      {"negation after",
       {{"", {"*.log\n!keep.log\n"}}},
       {"a.log", "d/b.log"},
       {"keep.log", "d/keep.log"}},
      {"negation before", {{"", {"!keep.log\n*.log\n"}}}, {"a.log", "keep.log"}, {"a.txt"}},
      {"directory only",
       {{"", {"build/\n"}}},
       {"build/", "src/build/", "build/x.c"},
       {"src/build.c"}},
      {"directory only, a file of that name", {{"", {"build/\n"}}}, {}, {"build", "src/build"}},
      {"anchored by a leading slash",
       {{"", {"/top\n/dir/\n"}}},
       {"top", "dir/", "dir/f"},
       {"d/top", "d/dir/", "d/dir/f"}},
      {"anchored by a middle slash",
       {{"", {"sub/x\ndoc/*.txt\n"}}},
       {"sub/x", "doc/a.txt"},
       {"d/sub/x", "doc/sub/a.txt", "doc/a.md"}},
      {"question mark and classes",
       {{"", {"a?c\n*.[oa]\nlib[!x].so\nf[a-c]g\nh[^0-9]\n[]]z\n"}}},
       {"abc", "x.o", "x.a", "liby.so", "fbg", "hx", "]z"},
       {"ac", "abbc", "x.b", "libx.so", "fdg", "h5", "z"}},
      {"leading double star",
       {{"", {"**/logs\n**/foo/bar\n"}}},
       {"logs/", "a/b/logs/", "foo/bar", "x/y/foo/bar"},
       {"foo/baz", "barfoo/bar", "logsx"}},
      {"trailing double star",
       {{"", {"out/**\n"}}},
       {"out/a", "out/d/", "out/d/b"},
       {"out/", "x/out/a"}},
      {"middle double star",
       {{"", {"a/**/b\n"}}},
       {"a/b", "a/x/b", "a/x/y/b"},
       {"a/xb", "a/x/bb", "c/a/b"}},
      {"double star in a name", {{"", {"x**y\n"}}}, {"xay", "xy"}, {"xa/y"}},
      {"nested ignore files",
       {{"", {"*.tmp\nlocal\n"}}, {"sub", {"!keep.tmp\n/only\n!local\n"}}},
       {"keep.tmp", "local", "x/local", "sub/only", "sub/a.tmp"},
       {"sub/keep.tmp", "sub/local", "sub/x/only", "only"}},
      {"deeper rules relative to their directory",
       {{"a", {"/b/c\nd/\n"}}},
       {"a/b/c", "a/d/", "a/x/d/"},
       {"b/c", "a/x/b/c", "d/"}},
      {"no re-include below an excluded directory",
       {{"", {"build/\n!build/keep\n"}}},
       {"build/keep", "build/other"},
       {}},
      {"re-include with a star",
       {{"", {"build/*\n!build/keep\n"}}},
       {"build/other"},
       {"build/keep", "build/"}},
      {"star matches dot files",
       {{"", {"*\n!*/\n!*.c\n"}}},
       {".env", "d/x.h"},
       {"d/", "d/x.c", "y.c"}},
  };
  return *scenarios;
}

TEST(IgnoreRulesTest, Scenarios) {
  for (const Scenario& scenario : Scenarios()) {
    SCOPED_TRACE(scenario.name);
    for (const std::string& path : scenario.ignored)
      EXPECT_TRUE(WalkIgnored(scenario.tree, path)) << path;
    for (const std::string& path : scenario.kept)
      EXPECT_FALSE(WalkIgnored(scenario.tree, path)) << path;
  }
}

// Runs each scenario with git in a temporary repository: git must agree on every path.
TEST(IgnoreRulesTest, GitAgrees) {
  if (RunProgram({"git", "--version"}).exit_code != 0) GTEST_SKIP() << "git is not installed";
  const auto base =
      std::filesystem::temp_directory_path() / ("podrun-ignore-test-" + std::to_string(::getpid()));
  for (const Scenario& scenario : Scenarios()) {
    SCOPED_TRACE(scenario.name);
    std::filesystem::remove_all(base);
    std::filesystem::create_directories(base);
    ASSERT_EQ(0, RunProgram({"git", "init", "-q", base.string()}).exit_code);
    std::vector<std::pair<std::string, bool>> queries;
    for (const std::string& path : scenario.ignored) queries.emplace_back(path, true);
    for (const std::string& path : scenario.kept) queries.emplace_back(path, false);
    for (const auto& [query, ignored] : queries) {
      if (query.ends_with('/')) {
        std::filesystem::create_directories(base / query);
      } else {
        std::filesystem::create_directories((base / query).parent_path());
        std::ofstream(base / query).put('x');
      }
    }
    for (const auto& [dir, files] : scenario.tree) {
      ASSERT_TRUE(files.podrunignore.empty()) << "git knows no .podrunignore";
      std::filesystem::create_directories(base / dir);
      std::ofstream(base / dir / ".gitignore") << files.gitignore;
    }
    for (const auto& [query, ignored] : queries) {
      std::string path = query.ends_with('/') ? query.substr(0, query.size() - 1) : query;
      ProgramResult git =
          RunProgram({"git", "-C", base.string(), "-c", "core.excludesFile=/dev/null",
                      "check-ignore", "-q", "--no-index", "--", path});
      ASSERT_TRUE(git.exit_code == 0 || git.exit_code == 1) << git.err;
      EXPECT_EQ(ignored, git.exit_code == 0) << query;
    }
  }
  std::filesystem::remove_all(base);
}

TEST(IgnoreRulesTest, PodrunIgnoreOverridesGitIgnore) {
  Tree tree = {{"", {"*.bin\nnotes/\n", "!model.bin\ndata/\n"}}, {"sub", {"", "!notes/\n*.bin\n"}}};
  EXPECT_FALSE(WalkIgnored(tree, "model.bin"));
  EXPECT_TRUE(WalkIgnored(tree, "other.bin"));
  EXPECT_TRUE(WalkIgnored(tree, "data/"));
  EXPECT_TRUE(WalkIgnored(tree, "notes/"));
  EXPECT_FALSE(WalkIgnored(tree, "sub/notes/"));
  EXPECT_TRUE(WalkIgnored(tree, "sub/model.bin"));  // the deeper directory's rule wins
}

TEST(IgnoreRulesTest, GitIsAlwaysExcluded) {
  Tree tree = {{"", {"!.git\n!.git/\n", "!**/.git\n"}}};
  EXPECT_TRUE(WalkIgnored(tree, ".git/"));
  EXPECT_TRUE(WalkIgnored(tree, ".git"));  // a worktree's or submodule's .git file
  EXPECT_TRUE(WalkIgnored(tree, "sub/.git/"));
  EXPECT_TRUE(WalkIgnored(tree, "sub/.git"));
  EXPECT_FALSE(WalkIgnored(tree, ".gitignore"));
  EXPECT_FALSE(WalkIgnored(tree, "x.git"));
  EXPECT_FALSE(WalkIgnored(tree, ".github/"));
}

TEST(IgnoreRulesTest, PopLeavesTheDirectory) {
  IgnoreRules rules;
  rules.Push("", {"a\n"});
  rules.Push("sub", {"b\n", "c\n"});
  EXPECT_EQ(2u, rules.depth());
  EXPECT_TRUE(rules.Ignored("sub/a", false));
  EXPECT_TRUE(rules.Ignored("sub/b", false));
  EXPECT_TRUE(rules.Ignored("sub/c", false));
  rules.Pop();
  EXPECT_EQ(1u, rules.depth());
  EXPECT_TRUE(rules.Ignored("other/a", false));
  EXPECT_FALSE(rules.Ignored("other/b", false));
  EXPECT_FALSE(rules.Ignored("other/c", false));
  // Rules of a directory do not reach a sibling with a common prefix.
  rules.Push("sub", {"x\n"});
  EXPECT_FALSE(rules.Ignored("subway/x", false));
  EXPECT_TRUE(rules.Ignored("sub/x", false));
}

TEST(IgnoreRulesTest, NoRules) {
  IgnoreRules rules;
  EXPECT_FALSE(rules.Ignored("a", false));
  rules.Push("", {});
  EXPECT_FALSE(rules.Ignored("a/b", true));
  EXPECT_TRUE(rules.Ignored(".git", true));
}

TEST(IgnoreWildMatchTest, GitCases) {
  // A selection of git's t3070-wildmatch cases (the pathname-mode column).
  EXPECT_TRUE(WildMatch("foo", "foo"));
  EXPECT_FALSE(WildMatch("bar", "foo"));
  EXPECT_TRUE(WildMatch("???", "foo"));
  EXPECT_FALSE(WildMatch("*f", "foo/f"));
  EXPECT_TRUE(WildMatch("**/foo", "foo"));
  EXPECT_TRUE(WildMatch("**/foo", "x/y/foo"));
  EXPECT_FALSE(WildMatch("**/foo", "xfoo"));
  EXPECT_TRUE(WildMatch("foo/**", "foo/a/b"));
  EXPECT_FALSE(WildMatch("foo/**", "foo"));
  EXPECT_TRUE(WildMatch("foo/**/bar", "foo/bar"));
  EXPECT_TRUE(WildMatch("foo/**/bar", "foo/a/b/bar"));
  EXPECT_FALSE(WildMatch("foo/*/bar", "foo/a/b/bar"));
  EXPECT_TRUE(WildMatch("*/bar", "foo/bar"));
  EXPECT_FALSE(WildMatch("foo?bar", "foo/bar"));
  EXPECT_FALSE(WildMatch("foo[/]bar", "foo/bar"));
  EXPECT_TRUE(WildMatch("\\*", "*"));
  EXPECT_FALSE(WildMatch("\\*", "x"));
  EXPECT_TRUE(WildMatch("[a-c]", "b"));
  EXPECT_TRUE(WildMatch("[!a-c]", "d"));
  EXPECT_TRUE(WildMatch("[^a-c]", "d"));
  EXPECT_FALSE(WildMatch("[!a-c]", "a"));
  EXPECT_TRUE(WildMatch("[]]", "]"));
  EXPECT_TRUE(WildMatch("[a-]", "-"));
  EXPECT_TRUE(WildMatch("[[:digit:]]x", "5x"));
  EXPECT_FALSE(WildMatch("[[:digit:]]x", "ax"));
  EXPECT_TRUE(WildMatch("[[:alpha:][:digit:]]", "q"));
  EXPECT_FALSE(WildMatch("[[:nope:]]", "n"));  // an unknown class matches nothing
  EXPECT_FALSE(WildMatch("[abc", "a"));        // an unterminated class matches nothing
  EXPECT_TRUE(WildMatch("*.c", ".c"));
  EXPECT_TRUE(WildMatch("-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
                        "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1"));
}

}  // namespace
}  // namespace podrun
