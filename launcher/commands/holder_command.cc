// The hidden command that runs the connection holder.
#include "launcher/commands/holder_command.h"

#include <cstdlib>
#include <string>

#include "launcher/persist/holder_server.h"
#include "launcher/store/podrun_home.h"

namespace podrun {

int HolderMain(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--fd") return 2;
  char* end = nullptr;
  const long fd = std::strtol(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0' || fd < 3) return 2;
  // The holder's files are in the state directory of the command that started it (its
  // environment is that command's).
  return RunHolder(static_cast<int>(fd), HolderPathsIn(PodrunHome()));
}

}  // namespace podrun
