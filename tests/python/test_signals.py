"""Signals after `import murmur`: the interpreter's handlers stay its own
(python/murmur/_signals.py). Each case runs in a fresh interpreter, since the
library whose constructor takes the signals loads once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run_python(code: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # This pytest process imported murmur, which set the switch: the cases
    # below must start without it unless they say otherwise.
    env.pop("IPATH_NO_BACKTRACE", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


CTRL_C_RAISES_KEYBOARD_INTERRUPT = """
import os, signal, time
{before}
import murmur
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    print("no KeyboardInterrupt")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
"""


def test_ctrl_c_after_import_raises_keyboard_interrupt():
    result = run_python(CTRL_C_RAISES_KEYBOARD_INTERRUPT.format(before=""))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "KeyboardInterrupt"


def test_ctrl_c_raises_keyboard_interrupt_when_libfabric_was_loaded_before_murmur():
    # Another package loaded libfabric first: the library took SIGINT before
    # murmur could prevent it, and murmur gives it back.
    before = "import ctypes; ctypes.CDLL('libfabric.so.1')"
    result = run_python(CTRL_C_RAISES_KEYBOARD_INTERRUPT.format(before=before))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "KeyboardInterrupt"


def test_a_sigterm_handler_installed_before_import_still_runs():
    code = """
import os, signal, time
signal.signal(signal.SIGTERM, lambda signo, frame: print("handler ran", flush=True) or os._exit(0))
import murmur
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("handler did not run")
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "handler ran"


def test_the_switch_is_left_as_the_user_set_it():
    code = "import os, murmur; print(os.environ['IPATH_NO_BACKTRACE'])"
    assert run_python(code).stdout.strip() == "1"
    assert run_python(code, {"IPATH_NO_BACKTRACE": "0"}).stdout.strip() == "0"


@pytest.mark.parametrize("signo_name", ["SIGSEGV", "SIGABRT"])
def test_a_crash_signal_ends_the_process_by_that_signal(signo_name):
    # Not exit status 1 from a handler that ran the interpreter's teardown.
    code = f"import os, signal, murmur; os.kill(os.getpid(), signal.{signo_name})"
    env = {"PYTHONFAULTHANDLER": ""}
    if "ASAN_OPTIONS" in os.environ:
        # The asan lane: ASan's own SIGSEGV handler would report the signal
        # and abort, so the process would end by SIGABRT whatever murmur
        # did. The test is about murmur's handlers.
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":handle_segv=0"
    result = run_python(code, env)
    import signal
    assert result.returncode == -getattr(signal, signo_name), (result.returncode, result.stderr)
