// Which rank runs where: ranks fill the hosts in order, each up to its slots.
//
// Pure functions; thread-safe.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "peer/launcher/hostfile.h"

namespace murmur::peer::launcher {

struct Placement {
  int rank = 0;
  std::string host;    // as named in the hostfile ("localhost" without one)
  int local_rank = 0;  // index among the ranks on the same host name
  int local_size = 1;  // ranks on the same host name
  bool local = true;   // spawned here rather than through ssh
};

// A request the hosts cannot satisfy (like mpirun's "not enough slots").
class SlotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `np` ranks on `hosts` (empty: all on "localhost"). `source` names the host
// list in errors ("hosts.txt", "-H"). Throws SlotError naming both counts
// when np exceeds the slots.
std::vector<Placement> place_ranks(int np, const std::vector<HostSlots>& hosts, const std::string& source);

// localhost, 127.0.0.1, ::1, or this machine's host name (full or short).
bool is_this_host(const std::string& host);

}  // namespace murmur::peer::launcher
