// See heap_tuning.h.
#include "proto/heap_tuning.h"

#include <malloc.h>

namespace podrun {

void TuneHeapForBuffers() {
  (void)::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  (void)::mallopt(M_TRIM_THRESHOLD, 16 << 20);
}

}  // namespace podrun
