// glibc's heap tuned for programs that move output in buffers of 64 KiB to a few MiB.
#pragma once

namespace podrun {

// Keeps freed buffers of up to a few MiB on the heap for the next one: below 4 MiB, a buffer is
// not given its own mmap, and the heap's top is given back to the kernel only past 16 MiB free.
// glibc's defaults (128 KiB, adjusted as buffers come and go) returned and refaulted the pages of
// every 128 KiB log record, zeroing each page again (docs/decisions.md, "The supervisor's
// reads"). Call once, first thing in main.
void TuneHeapForBuffers();

}  // namespace podrun
