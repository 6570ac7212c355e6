// SyscallName: the name of a system call number on this machine's architecture, for
// `podrun why` (a process's current system call, from /proc/<pid>/syscall). The table holds the
// calls a stuck program is usually found in (waits, I/O, sleeps, locks) and a few more; it is
// built from <sys/syscall.h>, each entry only where the architecture has that call.
#pragma once

#include <string>

namespace podrun::agent {

// The name of system call `number` ("futex"); "#N" when the table has none for it.
std::string SyscallName(long number);

}  // namespace podrun::agent
