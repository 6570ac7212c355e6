// The podrun command line: one table of subcommands (name, one-line help, handler), Ninja style.
#pragma once

namespace podrun {

// Runs podrun with its command line; returns the process exit code. Never throws.
int Main(int argc, char** argv);

}  // namespace podrun
