// Cross-memory attach (CMA) between the peers of one host, for shm.
//
// libfabric's shm moves a message larger than its inject size (4 KiB) with
// one process_vm_readv by the receiver, which needs ptrace permission over
// the sender. Without it (checked by the provider per peer, or forced off by
// FI_SHM_DISABLE_CMA) shm copies through segment buffers in the shared
// region instead (SAR), and libfabric 1.17's SAR has a trap: a few 64 KiB
// messages that arrived before their receives were posted held up a later
// message on another tag between the same two peers until the receives came
// (LibfabricTransportTest.AnUnclaimedMessageDoesNotHoldUpAnotherTag, 60 s
// timeout, with FI_SHM_DISABLE_CMA=1). With CMA the same test passes.
//
// Where CMA is lost on ordinary hosts: the Yama LSM's ptrace_scope 1
// (Ubuntu's default) lets a process ptrace only its descendants, and
// murmur's peers are siblings. A process may lift that for itself with
// prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), as Open MPI's shared-memory
// transport does. What that grants is all of ptrace, not only reads: any
// process of the same user may attach to this one (what ptrace_scope 0
// allows for every process), for the rest of the process's life.
// MURMUR_SHM_PTRACER=0 keeps it off (shm then runs on SAR, with the
// warning below). Scopes 2 and 3 (admin only, no ptrace at all) cannot be
// lifted from user space: shm runs on SAR, and a warning says what that
// risks. Other refusals (a seccomp profile, AppArmor) are not detected.
//
// Thread safety: allow_peers_to_read_this_process() may be called from any
// thread; it acts once per process (again in a forked child, which does not
// inherit the parent's PR_SET_PTRACER).
#pragma once

#include <optional>

namespace murmur::fabric::libfabric {

enum class CrossMemoryAccess {
  kOpen,           // no Yama, or ptrace_scope 0: peers of the same user may read
  kLiftedByPrctl,  // ptrace_scope 1: this process let any peer read it
  kRefused,        // ptrace_scope 2 or 3, turned off, or the prctl failed: shm runs on SAR
};

// What a process can arrange under Yama's ptrace_scope `scope` (nullopt:
// no Yama, the file is absent). Pure: the decision, for tests.
CrossMemoryAccess cross_memory_access_for(std::optional<int> scope);

// Whether FI_SHM_DISABLE_CMA holds a true value as libfabric reads it
// (1, true, yes, on; any case).
bool cma_disabled_by_environment();

// Reads /proc/sys/kernel/yama/ptrace_scope, lifts scope 1 for this process
// (once per process), logs what it did and, when CMA stays refused, warns
// once naming the setting and the consequence. Returns the outcome.
CrossMemoryAccess allow_peers_to_read_this_process();

}  // namespace murmur::fabric::libfabric
