#!/usr/bin/python3
"""The soak's verdict on synthetic series (no job runs):

    bench/soak/verdict_test.py      # ctest runs it as bench_soak_verdict_test
"""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict  # noqa: E402


def samples(series, values, rank=0, pid=100, step_min=1.0):
    return [{"minute": i * step_min, "rank": rank, "pid": pid, series: v} for i, v in enumerate(values)]


class Verdict(unittest.TestCase):
    def test_a_flat_noisy_rss_passes(self):
        noise = random.Random(20)
        rss = [300 + noise.uniform(-6, 6) for _ in range(31)]
        results, failures = verdict.judge(samples("rss_mib", rss), 5, {"rss_mib": (0.05, 16.0)})
        self.assertEqual(failures, [])
        self.assertTrue(results[(0, "rss_mib")]["ok"])

    def test_a_steadily_growing_rss_fails_naming_rank_series_and_minute(self):
        # 1.5 MiB a minute: under the noise of one sample, 37 MiB over 25 minutes.
        rss = [300 + 1.5 * m for m in range(31)]
        _, failures = verdict.judge(samples("rss_mib", rss, rank=3), 5, {"rss_mib": (0.05, 16.0)})
        self.assertEqual(len(failures), 1)
        self.assertIn("rank 3 rss_mib", failures[0])
        self.assertIn("at minute 30.0", failures[0])
        self.assertIn("grew from 307.5 at minute 5.0 to 345", failures[0])

    def test_growth_during_the_warm_up_is_not_judged(self):
        fds = [10, 20, 30, 40, 40, 40, 40, 41]
        results, failures = verdict.judge(samples("fds", fds), 4, {"fds": (0.0, 2)})
        self.assertEqual(failures, [])
        self.assertEqual(results[(0, "fds")]["base"], 40)

    def test_one_descriptor_more_per_sample_fails(self):
        fds = [40 + m for m in range(10)]
        _, failures = verdict.judge(samples("fds", fds), 2, {"fds": (0.0, 2)})
        self.assertEqual(len(failures), 1)
        self.assertIn("above the limit 44", failures[0])

    def test_too_few_samples_after_warm_up_fail(self):
        _, failures = verdict.judge(samples("threads", [5, 5, 5]), 2, {"threads": (0.0, 2)})
        self.assertIn("1 samples after the warm-up of 2 min", failures[0])

    def test_each_rank_is_judged_alone(self):
        flat = samples("threads", [12] * 8, rank=0)
        growing = samples("threads", [12, 12, 12, 13, 14, 15, 16, 17], rank=1, pid=101)
        results, failures = verdict.judge(flat + growing, 2, {"threads": (0.0, 2)})
        self.assertTrue(results[(0, "threads")]["ok"])
        self.assertFalse(results[(1, "threads")]["ok"])
        self.assertEqual(verdict.worst(results, "threads")[0], 1)

    def test_a_restarted_peer_is_reported(self):
        s = samples("fds", [1, 1, 1], rank=2, pid=7) + [{"minute": 3.0, "rank": 2, "pid": 8, "fds": 1}]
        self.assertEqual(len(verdict.pids_changed(s)), 1)
        self.assertIn("rank 2: pid 7 became 8 at minute 3.0", verdict.pids_changed(s)[0])

    def test_slope_is_per_hour(self):
        self.assertAlmostEqual(verdict.slope_per_hour([(m, 2.0 * m) for m in range(10)]), 120.0)
        self.assertEqual(verdict.slope_per_hour([(1, 5.0)]), 0.0)


if __name__ == "__main__":
    unittest.main()
