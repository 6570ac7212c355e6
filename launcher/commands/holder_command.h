// `podrun __holder --fd N`: the connection holder's process (persist/holder_server.h), started
// by a command, never by hand; hidden from help and completion.
#pragma once

namespace podrun {

// Runs the holder on the listening socket N given by `--fd N` (argv[0] is the command's name);
// returns the process exit code (2 on a bad command line).
int HolderMain(int argc, char** argv);

}  // namespace podrun
