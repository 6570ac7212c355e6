// See atomic_file.h.
#include "launcher/base/atomic_file.h"

#include <fmt/format.h>

#include <system_error>

#include "launcher/base/error.h"
#include "proto/atomic_write.h"

namespace podrun {

void WriteFileAtomically(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  try {
    ReplaceFileAtomically(path, content, mode, /*durable=*/true);
  } catch (const std::system_error& e) {
    throw Error(ExitCode::kFailed, fmt::format("{}: {}", path.string(), e.code().message()));
  }
}

}  // namespace podrun
