// Fuzzes the sync ignore rules (launcher/sync/ignore_rules.h): arbitrary .gitignore and
// .podrunignore contents, then paths checked against them, and WildMatch on its own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/sync/ignore_rules.h"

namespace {

// Splits `s` at the first '\0': the part before, and (in *rest) the part after.
std::string_view Cut(std::string_view* rest) {
  const size_t at = rest->find('\0');
  const std::string_view head = rest->substr(0, at);
  rest->remove_prefix(at == std::string_view::npos ? rest->size() : at + 1);
  return head;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Input: root .gitignore \0 root .podrunignore \0 sub/.gitignore \0 paths, one per line
  // (a trailing '/' marks a directory).
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string root_git(Cut(&rest));
  const std::string root_podrun(Cut(&rest));
  const std::string sub_git(Cut(&rest));
  podrun::IgnoreRules rules;
  rules.Push("", {root_git, root_podrun});
  while (!rest.empty()) {
    std::string_view path = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(path.size() == rest.size() ? rest.size() : path.size() + 1);
    const bool is_dir = !path.empty() && path.back() == '/';
    if (is_dir) path.remove_suffix(1);
    (void)rules.Ignored(path, is_dir);
    rules.Push("sub", {sub_git});
    (void)rules.Ignored(path, is_dir);
    rules.Pop();
    (void)podrun::WildMatch(root_git, path);
  }
  return 0;
}
