// podrun: runs one job on every worker of a multi-host accelerator pod.
#include "launcher/commands/cli.h"

int main(int argc, char** argv) { return podrun::Main(argc, argv); }
