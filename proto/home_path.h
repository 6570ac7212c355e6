// The one "~" expansion: the launcher's spec paths, the agent's workdirs and mount points.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace podrun {

// "~" -> home, "~/x" -> home + "/x"; nullopt for any other path ("~user" is not expanded).
inline std::optional<std::string> ExpandHome(std::string_view path, std::string_view home) {
  if (path == "~") return std::string(home);
  if (path.starts_with("~/")) {
    std::string out(home);
    if (!out.ends_with('/')) out += '/';
    out += path.substr(2);
    return out;
  }
  return std::nullopt;
}

}  // namespace podrun
