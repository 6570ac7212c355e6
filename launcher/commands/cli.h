// The podrun command line: one table of subcommands (name, one-line help, options and run; each
// command's file makes its entry: command.h), Ninja style, with help and "did you mean".
#pragma once

namespace podrun {

// Runs podrun with its command line; returns the process exit code. Never throws.
int Main(int argc, char** argv);

}  // namespace podrun
