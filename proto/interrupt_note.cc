// See interrupt_note.h.
#include "proto/interrupt_note.h"

#include <atomic>

namespace podrun {
namespace {

std::atomic<uint64_t> interrupts{0};
std::atomic<int> watchers{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "NoteInterrupt is async-signal-safe");

}  // namespace

void NoteInterrupt() { interrupts.fetch_add(1); }
uint64_t InterruptCount() { return interrupts.load(); }
void SetInterruptsNoted(bool noted) { watchers.fetch_add(noted ? 1 : -1); }
bool InterruptsNoted() { return watchers.load() > 0; }

}  // namespace podrun
