// podrun: runs one job on every worker of a multi-host accelerator pod.
#include "launcher/commands/cli.h"
#include "proto/heap_tuning.h"
#include "proto/private_state.h"

int main(int argc, char** argv) {
  podrun::TuneHeapForBuffers();
  podrun::RestrictUmask();  // docs/design.md decision 14: what podrun creates is its user's alone
  return podrun::Main(argc, argv);
}
