// Loading libfabric must leave this process's signal dispositions as the
// program set them (src/fabric/libfabric/provider_signal_handlers.h): this
// binary links libfabric, so libinfinipath's constructor ran before main.
#include "fabric/libfabric/provider_signal_handlers.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>

namespace murmur::fabric::libfabric {
namespace {

bool libinfinipath_is_loaded() {
  void* handle = ::dlopen("libinfinipath.so.4", RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) ::dlclose(handle);
  return handle != nullptr;
}

TEST(ProviderSignalHandlers, NoSignalIsHeldByAProviderLibraryAfterLoad) {
  if (!libinfinipath_is_loaded()) GTEST_SKIP() << "this libfabric does not load libinfinipath";
  EXPECT_TRUE(signals_held_by_provider_libraries().empty());
  // With the library's switch set it took nothing, and SIGINT is what this
  // process inherited (SIG_IGN in a job started with `&`); otherwise the
  // release put the default back.
  if (std::getenv("IPATH_NO_BACKTRACE") == nullptr) {
    struct sigaction action {};
    ASSERT_EQ(::sigaction(SIGINT, nullptr, &action), 0);
    EXPECT_EQ(action.sa_handler, SIG_DFL) << "SIGINT's handler was left to a library";
  }
}

// What the release prevents: with libinfinipath's handler, SIGTERM made a
// process exit with status 1 (running its static destructors on the
// signalled thread); with the default disposition it is killed by SIGTERM.
TEST(ProviderSignalHandlers, SigtermKillsTheProcessInsteadOfExitingFromAHandler) {
  if (!libinfinipath_is_loaded()) GTEST_SKIP() << "this libfabric does not load libinfinipath";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::raise(SIGTERM);
    ::_exit(3);  // not reached when SIGTERM kills
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace murmur::fabric::libfabric
