#include "launcher/commands/version.h"

namespace podrun {

std::string_view Version() { return PODRUN_VERSION; }

}  // namespace podrun
