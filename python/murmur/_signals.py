"""The interpreter keeps its signal handlers when murmur's C++ runtime loads.

Debian's libfabric loads libinfinipath, whose constructor replaces the
handlers of SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT with one that
calls exit(1) from whatever thread the signal lands on: Ctrl-C then tore the
interpreter down under murmur's running threads instead of raising
KeyboardInterrupt (src/fabric/libfabric/provider_signal_handlers.h).

Two layers. Before the load, IPATH_NO_BACKTRACE=1 (that library's own switch)
keeps it from installing anything, so every disposition stays exactly as it
was. If libfabric was loaded earlier by someone else (another package over
Open MPI, say), the C++ side can only reset what was taken to the default;
the handlers Python knows of are then installed again from Python's own
record of them.
"""

from __future__ import annotations

import os
import signal
import threading

# The signals with a Python-level handler that the library takes.
_PYTHON_HANDLED = (signal.SIGINT, signal.SIGTERM)


def keep_handlers_across_load() -> None:
    """Call before the C++ extension is imported."""
    os.environ.setdefault("IPATH_NO_BACKTRACE", "1")


def reinstall_python_handlers() -> None:
    """Call after the C++ extension is imported: puts back the handlers
    Python believes are installed (signal.signal works on the main thread
    only; from another thread there is nothing this can do)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signo in _PYTHON_HANDLED:
        handler = signal.getsignal(signo)
        if handler is None:  # installed outside Python: not Python's to restore
            continue
        signal.signal(signo, handler)
