#!/usr/bin/python3
"""The soak's /proc sampler on this very process: opening one resource of a
kind must show as exactly one more of that kind.

    bench/soak/proc_sample_test.py  # ctest runs it as bench_soak_proc_sample_test
"""
import mmap
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proc_sample  # noqa: E402


class Sampler(unittest.TestCase):
    def test_a_socket_is_one_more_socket_and_descriptor(self):
        before = proc_sample.sample(os.getpid())
        with socket.socket():
            after = proc_sample.sample(os.getpid())
        self.assertEqual(after["sockets"], before["sockets"] + 1)
        self.assertEqual(after["fds"], before["fds"] + 1)

    def test_an_eventfd_is_an_anonymous_inode(self):
        before = proc_sample.sample(os.getpid())
        fd = os.eventfd(0)
        try:
            after = proc_sample.sample(os.getpid())
        finally:
            os.close(fd)
        self.assertEqual(after["anon_inodes"], before["anon_inodes"] + 1)

    def test_a_dev_shm_mapping_counts_as_shared_memory(self):
        if not os.path.isdir("/dev/shm"):
            self.skipTest("no /dev/shm")
        before = proc_sample.sample(os.getpid())
        with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="soak-test-") as f:
            f.truncate(4096)
            with mmap.mmap(f.fileno(), 4096):
                after = proc_sample.sample(os.getpid())
        self.assertEqual(after["shm_maps"], before["shm_maps"] + 1)
        self.assertEqual(after["maps"], before["maps"] + 1)

    def test_memory_and_threads_are_read_from_status(self):
        s = proc_sample.sample(os.getpid())
        self.assertGreater(s["rss_mib"], 1)
        self.assertGreaterEqual(s["hwm_mib"], s["rss_mib"])
        self.assertGreaterEqual(s["threads"], 1)

    def test_an_exited_process_samples_as_none(self):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertIsNone(proc_sample.sample(pid))

    def test_peers_are_the_children_carrying_murmur_rank(self):
        # Popen returns once the kernel has replaced the child's memory, but
        # (vfork) before execve has written the new environment's bounds:
        # for a moment /proc/PID/environ reads empty (seen once in a loaded
        # run of the suite). Wait for it with a deadline, as soak.py does by
        # sampling every interval.
        child = subprocess.Popen(["/bin/sleep", "10"], env={"MURMUR_RANK": "5"})
        try:
            deadline = time.monotonic() + 10
            while proc_sample.peers_of(os.getpid()) != {5: child.pid} and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(proc_sample.peers_of(os.getpid()), {5: child.pid})
        finally:
            child.kill()
            child.wait()


if __name__ == "__main__":
    unittest.main()
