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

// Which processes count as "on this machine" for the data plane: those that
// can reach each other through one loopback interface and one shared-memory
// file system. Host names cannot tell that: network namespaces and
// containers share a host name but not a loopback, and two machines can be
// given one name. So the identity is the kernel's boot id, the network and
// pid namespaces (/proc/self/ns; shm's cross-process copies address peers
// by pid) and the device of /dev/shm, as "boot:<id>/net:<inode>/pid:<inode>
// /shm:<device>". $MURMUR_HOST_ID, when set and not empty, replaces it (as
// NCCL_HOSTID does), for containers that detection misjudges; processes
// given one id must really share loopback and /dev/shm. Falls back to the
// host name where /proc cannot be read. Equal strings: same machine.
std::string machine_identity();

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
