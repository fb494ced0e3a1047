// Signal dispositions that libraries under libfabric take when they load.
//
// Debian's libfabric links the psm provider's libpsm_infinipath.so.1, which
// pulls in libinfinipath.so.4. That library's constructor installs one
// handler for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM as soon
// as it is loaded, whether or not any program ever uses an InfiniPath
// adapter, and over whatever the program had (a handler, or SIG_IGN). The
// handler calls exit(1) (measured: a SIGINT raised after loading libfabric
// ends the process with status 1 without calling the handler installed
// before). exit() from a signal handler runs the process's atexit handlers
// and static destructors on the interrupted thread while every other thread
// goes on: in a Python peer, Ctrl-C then tore the interpreter and murmur's
// objects down under the threads using them (signal 11), and a crash in any
// murmur process was reported as "exited 1" with no core. Its documented
// switch, IPATH_NO_BACKTRACE=1, only helps if it is in the environment
// before the library loads, which for a program linked with libfabric is
// before main.
//
// So murmur's fabric library gives such signals back as soon as it is
// loaded itself (a constructor in provider_signal_handlers.cc; the loader
// runs it after those of the libraries it depends on): each signal whose
// handler lies in one of the libraries named in the .cc gets the default
// disposition back. A handler the program installs later is not touched.
// What it cannot give back is the disposition the program had before the
// load, which the library overwrote without keeping: a program that ignored
// SIGINT (a job started with `&` by a non-interactive shell) or installed a
// handler before loading murmur must install it again (the Python package
// does this for its interpreter's handlers, and sets IPATH_NO_BACKTRACE
// before it loads murmur so that nothing is taken at all).
//
// Thread safety: both functions may be called from any thread; they read
// and set process-wide dispositions with sigaction. The release reads a
// disposition and then sets it: a handler another thread installs between
// the two for the same signal is put back (sigaction's old value tells).
#pragma once

#include <vector>

namespace murmur::fabric::libfabric {

// The signals whose handler currently lies in a provider's library.
std::vector<int> signals_held_by_provider_libraries();

// Restores SIG_DFL for every signal signals_held_by_provider_libraries()
// lists; returns those signals.
std::vector<int> release_signals_held_by_provider_libraries();

}  // namespace murmur::fabric::libfabric
