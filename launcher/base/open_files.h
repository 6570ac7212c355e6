// The launcher holds a few descriptors per worker (its SSH socket, the tunnel's socketpair,
// gRPC's wakeup fds, its log copies): a pod of a few hundred workers needs more than the
// default soft limit of 1024 open files.
#pragma once

#include <cstddef>

namespace podrun {

// Descriptors counted per worker, and for the launcher itself.
inline constexpr size_t kOpenFilesPerWorker = 8;
inline constexpr size_t kOpenFilesBase = 64;

// Raises the soft RLIMIT_NOFILE to what `workers` need, up to the hard limit. Throws
// Error(kUsage) when even the hard limit is too low, naming both numbers and the fix (nothing
// has been started then).
void EnsureOpenFiles(size_t workers);

}  // namespace podrun
