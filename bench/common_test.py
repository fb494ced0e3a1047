#!/usr/bin/python3
"""Checks that bench/common.py spells every metrics name the way
src/peer/train/metric_names.h declares it, and the helpers the scripts use.

    bench/common_test.py        # ctest runs it as bench_common_test
"""
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HEADER = os.path.join(common.REPO, "src", "peer", "train", "metric_names.h")


def declared(namespace):
    """{UPPER_SNAKE: value} of the `inline constexpr char kCamel[]` lines in
    one namespace of the header."""
    with open(HEADER) as f:
        text = f.read()
    block = re.search(r"namespace %s \{(.*?)\}  // namespace %s" % (namespace, namespace), text, re.S)
    if not block:
        raise AssertionError(f"{HEADER}: no namespace {namespace}")
    names = {}
    for camel, value in re.findall(r'inline constexpr char k(\w+)\[\] = "([^"]*)";', block.group(1)):
        names[re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()] = value
    return names


def spelled(cls):
    return {k: v for k, v in vars(cls).items() if k.isupper()}


class MetricNames(unittest.TestCase):
    def test_events_agree_with_the_header(self):
        self.assertEqual(spelled(common.Event), declared("event"))

    def test_keys_agree_with_the_header(self):
        self.assertEqual(spelled(common.Key), declared("key"))


class Helpers(unittest.TestCase):
    def test_time_to_target_is_the_first_evaluation_at_or_above_it(self):
        evals = [{"time": 1.0, "test_accuracy": 0.5, "train_seconds": 0.5},
                 {"time": 2.0, "test_accuracy": 0.85, "train_seconds": 1.2},
                 {"time": 3.0, "test_accuracy": 0.9}]
        self.assertEqual(common.time_to_target(evals, 0.85), (2.0, 1.2))
        self.assertEqual(common.time_to_target(evals, 0.9), (3.0, None))
        self.assertIsNone(common.time_to_target(evals, 0.95))

    def test_reads_metrics_by_rank_and_event(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "m-3.jsonl"), "w") as f:
                f.write('{"event":"start","rank":3}\n\n{"event":"eval","test_accuracy":0.5}\n')
            records = common.read_metrics(os.path.join(d, "m-{rank}.jsonl"), 3)
            self.assertEqual(len(records), 2)
            self.assertEqual(common.events(records, common.Event.EVAL), [{"event": "eval", "test_accuracy": 0.5}])

    def test_a_malformed_line_is_named_with_file_and_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.jsonl")
            with open(path, "w") as f:
                f.write('{"event":"start"}\n{"event":\n')
            with self.assertRaises(SystemExit) as e:
                common.read_jsonl(path)
            self.assertIn(path + ":2:", str(e.exception))

    def test_a_missing_binary_says_to_build(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit) as e:
                common.binary(d, "murmur-sim", "test")
            self.assertIn("src/sim/murmur-sim is missing: build murmur or pass --build", str(e.exception))


if __name__ == "__main__":
    unittest.main()
