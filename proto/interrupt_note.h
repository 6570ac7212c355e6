// A process-wide note of Ctrl-C, so that a blocking wait on any thread ends at once. The
// launcher takes SIGINT on one thread (launcher/attempt/interrupt_watcher.h) and notes each one
// here; a wait on a child (RunProgram) checks the count while it waits and, when it grows,
// stops the child instead of holding the Ctrl-C until the child ends. The agent notes nothing.
#pragma once

#include <cstdint>

namespace podrun {

// Counts one Ctrl-C. Async-signal-safe; any thread.
void NoteInterrupt();
// How many Ctrl-Cs were noted so far; a wait compares it with its value at the start.
uint64_t InterruptCount();

// While true, something takes SIGINT and notes it (an InterruptWatcher lives): a waiting
// caller then puts its child in a process group of its own and stops it on a noted Ctrl-C.
// While false, the terminal's Ctrl-C reaches the child itself (it shares the caller's group).
// Calls nest (one watcher may follow another): each true is undone by one false.
void SetInterruptsNoted(bool noted);
bool InterruptsNoted();

}  // namespace podrun
