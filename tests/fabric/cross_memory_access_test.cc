// cross_memory_access.h: what each Yama ptrace_scope allows, and that after
// allow_peers_to_read_this_process() a process that is not this one's
// ancestor (a forked child, as a sibling peer is not either) can read this
// process's memory the way shm's receiver does (process_vm_readv), unless
// the host refuses it for everyone.
#include "fabric/libfabric/cross_memory_access.h"

#include <gtest/gtest.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace murmur::fabric::libfabric {
namespace {

TEST(CrossMemoryAccess, WhatEachPtraceScopeAllows) {
  EXPECT_EQ(cross_memory_access_for(std::nullopt), CrossMemoryAccess::kOpen);  // no Yama
  EXPECT_EQ(cross_memory_access_for(0), CrossMemoryAccess::kOpen);
  EXPECT_EQ(cross_memory_access_for(1), CrossMemoryAccess::kLiftedByPrctl);
  EXPECT_EQ(cross_memory_access_for(2), CrossMemoryAccess::kRefused);
  EXPECT_EQ(cross_memory_access_for(3), CrossMemoryAccess::kRefused);
}

TEST(CrossMemoryAccess, AChildReadsThisProcessOnceAllowed) {
  if (cma_disabled_by_environment()) GTEST_SKIP() << "FI_SHM_DISABLE_CMA is set";
  const CrossMemoryAccess access = allow_peers_to_read_this_process();
  if (access == CrossMemoryAccess::kRefused) GTEST_SKIP() << "this host refuses cross-memory attach (Yama scope >= 2)";

  volatile std::uint64_t secret = 0x6d75726d7572ULL;  // "murmur"
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A child is not its parent's ancestor: under Yama scope 1 only the
    // parent's PR_SET_PTRACER lets it read, as it lets a sibling peer.
    // Exit status: 0 read and right, 1 read and wrong, 2 + errno refused.
    std::uint64_t seen = 0;
    iovec local{&seen, sizeof seen};
    iovec remote{const_cast<std::uint64_t*>(&secret), sizeof secret};
    const ssize_t n = ::process_vm_readv(parent, &local, 1, &remote, 1, 0);
    if (n < 0) ::_exit(errno == EPERM ? 2 : errno == ENOSYS ? 3 : 4);
    ::_exit(n == static_cast<ssize_t>(sizeof seen) && seen == 0x6d75726d7572ULL ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  const int outcome = WEXITSTATUS(status);
  if (access == CrossMemoryAccess::kOpen && (outcome == 2 || outcome == 3)) {
    // Refused by something murmur does not look at (seccomp, AppArmor):
    // nothing this process could have lifted.
    GTEST_SKIP() << "process_vm_readv refused without Yama (" << (outcome == 2 ? "EPERM" : "ENOSYS") << ")";
  }
  EXPECT_EQ(outcome, 0) << "a process that is not this one's ancestor could not read its memory (2: EPERM)";
}

TEST(CrossMemoryAccess, FiShmDisableCmaIsReadAsLibfabricReadsIt) {
  const char* saved = std::getenv("FI_SHM_DISABLE_CMA");
  const std::string restore = saved != nullptr ? saved : "";
  for (const char* truth : {"1", "true", "True", "YES", "on"}) {
    ::setenv("FI_SHM_DISABLE_CMA", truth, 1);
    EXPECT_TRUE(cma_disabled_by_environment()) << truth;
  }
  for (const char* falsehood : {"0", "false", "no", "off", ""}) {
    ::setenv("FI_SHM_DISABLE_CMA", falsehood, 1);
    EXPECT_FALSE(cma_disabled_by_environment()) << falsehood;
  }
  if (saved != nullptr) {
    ::setenv("FI_SHM_DISABLE_CMA", restore.c_str(), 1);
  } else {
    ::unsetenv("FI_SHM_DISABLE_CMA");
  }
}

}  // namespace
}  // namespace murmur::fabric::libfabric
