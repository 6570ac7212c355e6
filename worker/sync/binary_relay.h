// `podrun-agent lend`: lends this agent's own binary to workers that lack it (docs/design.md
// decision 11: the agent travels once over the user's uplink). The launcher starts it over SSH
// on a worker that just got the agent, with a random token on stdin; it listens on the worker's
// internal address, prints "PODRUN-AGENT SERVING <port>", detaches, and for a bounded time
// sends the binary to each connection whose first line is the token. The fetching worker has
// no agent yet, so it fetches with bash's /dev/tcp and checks the bytes against the hash the
// launcher gave it over SSH: the token keeps strangers out, the hash makes the bytes
// trustworthy; they are not encrypted (the binary is no secret).
#pragma once

#include <chrono>
#include <string>

namespace podrun::agent {

struct LendArgs {
  std::string address;                 // numeric; 0.0.0.0 when it is not this machine's
  std::chrono::seconds lifetime{120};  // exits after this long (or 10 s without a client)
  int max_clients = 64;                // exits after this many transfers
};

// Reads the token from stdin, listens, announces the port on stdout, detaches (fork, setsid)
// and serves. Returns the exit code (of the announcing process: 0 once it announced).
int Lend(const LendArgs& args);

}  // namespace podrun::agent
