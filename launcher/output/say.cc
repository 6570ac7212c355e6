// Say: "podrun: <message>" on stderr.
#include "launcher/output/say.h"

#include <unistd.h>

#include "launcher/output/live_progress.h"
#include "proto/write_all.h"

namespace podrun {

void Say(const std::string& message) {
  WriteAll(STDERR_FILENO, LiveProgress::ClearPrefix() + "podrun: " + message + "\n");
}

}  // namespace podrun
