// Facts about this host and the resources its processes leave behind, needed
// by every layer that names a peer or starts one: the fabric (PeerInfo
// hosts, shm endpoint names), the Peer API (its job environment) and the
// launchers (murmur-run, the demo, multi-process tests). They live here, at
// the bottom, so that a launcher needs no data-plane backend to use them.
//
// Thread safety: all functions are thread-safe. None blocks beyond a few
// system calls.
#pragma once

#include <string>

namespace murmur {

// This machine's host name (gethostname), for PeerInfo and messages;
// "localhost" if it cannot be read.
std::string local_host_name();

// Shared memory regions of murmur processes are named "<prefix><nonce>" in
// /dev/shm, with this prefix ("murmur-<pid>-"): the libfabric shm endpoint
// names its region so (a name no earlier process can have had), and
// remove_shm_regions_of finds them by it.
std::string shm_region_prefix(int pid);

// Removes the shm regions of process `pid`. A process killed with SIGKILL
// cannot unlink its own; launchers call this after reaping a peer so that
// killed jobs do not leak memory. Errors are ignored (a region already gone).
void remove_shm_regions_of(int pid);

}  // namespace murmur
