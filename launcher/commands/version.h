// podrun's version, as printed by `podrun --version`.
#pragma once

#include <string_view>

namespace podrun {

std::string_view Version();

}  // namespace podrun
