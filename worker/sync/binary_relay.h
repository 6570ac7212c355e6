// `podrun-agent lend`: lends this agent's own binary to workers that lack it (docs/design.md
// decision 11: the agent travels once over the user's uplink). The launcher starts it over SSH
// on a worker that just got the agent, with a random token as the first line of stdin; it
// listens on the worker's internal address, prints "PODRUN-AGENT SERVING <port>" and sends the
// binary to each connection whose first line is the token, for as long as its stdin stays open:
// the launcher closes it once every worker has its agent (and a launcher or SSH connection that
// dies closes it too), so that no lender outlives the launch's connect phase. The fetching
// worker has no agent yet, so it fetches with bash's /dev/tcp and checks the bytes against the
// hash the launcher gave it over SSH: the token keeps strangers out, the hash makes the bytes
// trustworthy; they are not encrypted (the binary is no secret).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "proto/unique_fd.h"

namespace podrun::agent {

struct LendArgs {
  std::string address;                 // the worker's pod address (numeric, this machine's)
  std::chrono::seconds lifetime{120};  // exits after this long at most, stdin open or not
  int max_clients = 64;                // exits after this many transfers
};

// What bounds a lender besides its stdin.
struct LendLimits {
  std::chrono::milliseconds lifetime{120'000};  // serves no longer than this
  std::chrono::milliseconds idle{10'000};       // ends after this long without a connection
  // A connection has this long in all to send its token line; then it is dropped.
  std::chrono::milliseconds token_deadline{5'000};
  int max_clients = 64;          // transfers in all (connections that presented the token)
  int max_at_once = 8;           // transfers at once; more wait for their turn
  int max_unauthenticated = 16;  // connections yet to present the token; more wait unaccepted
};

// Sends the first `size` bytes of `binary` to each connection accepted on `listener` (a
// non-blocking listening socket, closed once no more are wanted) whose first line is `token`;
// only those count toward max_clients and max_at_once. Returns once `stop` reads EOF (or fails),
// or the limits end it, with nothing of it left behind (connections closed, threads joined;
// `binary` stays the caller's). Returns the number of connections that presented the token.
int ServeBinary(UniqueFd listener, int binary, off_t size, const std::string& token, int stop,
                const LendLimits& limits);

// Reads the token from stdin, listens, announces the port on stdout and serves until stdin
// reaches EOF (ServeBinary). Returns the exit code.
int Lend(const LendArgs& args);

}  // namespace podrun::agent
