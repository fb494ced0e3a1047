"""What the bench scripts share: murmur-peer's metrics names, reading metrics
files, time to a target accuracy, locating murmur's binaries, running jobs.

Scripts in bench/<part>/ import it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import common

Event and Key spell the names src/peer/train/metric_names.h declares
(docs/training.md says what each holds); bench/common_test.py checks that
they agree.
"""
import json
import os
import shlex
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BUILD = os.path.join(REPO, "build")


class Event:
    """Values of a metrics record's "event" key (metric::event)."""
    START = "start"
    STEP = "step"
    EVAL = "eval"
    EPOCH = "epoch"
    SCHEDULE = "schedule"
    SUMMARY = "summary"
    VIEW = "view"
    REPARTITION = "repartition"


class Key:
    """Keys of metrics records (metric::key)."""
    EVENT = "event"
    # start
    RANK = "rank"
    WORLD_SIZE = "world_size"
    MODEL = "model"
    SCHEDULE = "schedule"
    PARAMETERS = "parameters"
    ALGORITHM = "algorithm"
    COMPRESSOR = "compressor"
    TOPOLOGY = "topology"
    PERIOD = "period"
    PARTITION = "partition"
    SHARD_EXAMPLES = "shard_examples"
    STEPS_PER_EPOCH = "steps_per_epoch"
    EPOCHS = "epochs"
    BATCH = "batch"
    PID = "pid"
    # step, eval, epoch
    TIME = "time"
    EVAL_SECONDS = "eval_seconds"
    TRAIN_SECONDS = "train_seconds"
    EPOCH = "epoch"
    STEP = "step"
    LOSS = "loss"
    TRAIN_ACCURACY = "train_accuracy"
    LR = "lr"
    TEST_ACCURACY = "test_accuracy"
    TEST_LOSS = "test_loss"
    BYTES_SENT = "bytes_sent"
    BYTES_RECEIVED = "bytes_received"
    COMPUTE_SECONDS = "compute_seconds"
    COMMUNICATION_WAIT_SECONDS = "communication_wait_seconds"
    COMMUNICATION_THREAD_SECONDS = "communication_thread_seconds"
    COMMUNICATION_THREAD_CPU_SECONDS = "communication_thread_cpu_seconds"
    COMMUNICATION_OVERLAP_SECONDS = "communication_overlap_seconds"
    ROUNDS = "rounds"
    RATIO = "ratio"
    CONSENSUS_DISTANCE = "consensus_distance"
    LINKS = "links"
    HOST = "host"
    # summary (and the result event murmur-run gathers)
    AVERAGE_MODEL_TEST_ACCURACY = "average_model_test_accuracy"
    WALL_SECONDS = "wall_seconds"
    PEAK_RSS_BYTES = "peak_rss_bytes"
    MODEL_BUFFER_BYTES = "model_buffer_bytes"
    DATASET_BYTES = "dataset_bytes"
    SETUP_SECONDS = "setup_seconds"
    STEPS = "steps"
    # view, repartition
    GENERATION = "generation"
    MEMBERS = "members"
    LOST = "lost"
    JOINED = "joined"
    SPECTRAL_GAP = "spectral_gap"
    GRAPH = "graph"
    REASON = "reason"
    POSITION = "position"
    UNIX_TIME = "unix_time"


# murmur-run --summary adds these to the result events it gathers
# (docs/launcher.md): every peer's result, and their test accuracies.
SUMMARY_PEERS = "peers"
SUMMARY_PEER_TEST_ACCURACY = "peer_test_accuracy"


def read_jsonl(path):
    """The records of a JSON-lines file; exits naming path:line on a bad line."""
    records = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: {e}")
    return records


def metrics_path(pattern, rank):
    """murmur-peer --metrics PATTERN's file for `rank` ("{rank}" replaced)."""
    return pattern.replace("{rank}", str(rank))


def read_metrics(pattern, rank=0):
    return read_jsonl(metrics_path(pattern, rank))


def events(records, event):
    """The records of one event (an Event value), in file order."""
    return [r for r in records if r.get(Key.EVENT) == event]


def read_summary(path):
    """murmur-run --summary FILE."""
    with open(path) as f:
        return json.load(f)


def first_reaching(evaluations, target):
    """The first evaluation whose test accuracy is at or above `target`, or None."""
    return next((e for e in evaluations if e[Key.TEST_ACCURACY] >= target), None)


def time_to_target(evaluations, target):
    """(time, train_seconds) of the first evaluation reaching `target`, or None;
    train_seconds is None in records written before murmur-peer had it."""
    first = first_reaching(evaluations, target)
    return (first[Key.TIME], first.get(Key.TRAIN_SECONDS)) if first else None


BINARIES = {
    "murmur-run": "src/peer/launcher/murmur-run",
    "murmur-peer": "src/peer/train/murmur-peer",
    "murmur-sim": "src/sim/murmur-sim",
    "murmur-sim-profile": "src/sim/murmur-sim-profile",
    "scheduler_drop_sim": "bench/sim/scheduler_drop_sim",
}


def binary(build, name, script=None):
    """The absolute path of one of murmur's programs in build directory
    `build`; exits saying what to do when it has not been built."""
    path = os.path.join(os.path.abspath(build), BINARIES[name])
    if not os.access(path, os.X_OK):
        sys.exit(f"{script or os.path.basename(sys.argv[0])}: {path} is missing: build murmur or pass --build")
    return path


def stop_on_signals():
    """SIGTERM and SIGHUP unwind like Ctrl-C, so that `finally` blocks run
    (results written, namespaces taken down, jobs stopped)."""
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


def run_logged(command, log_path, env=None):
    """Runs `command` with its output (after the command line) in log_path;
    returns its exit status. Interrupted, it stops the command with SIGTERM
    (murmur-run then stops its peers; SIGKILL would leave them running)."""
    with open(log_path, "w") as log:
        log.write(shlex.join(command) + "\n")
        log.flush()
        launched = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            return launched.wait()
        except BaseException:
            launched.terminate()
            launched.wait()
            raise


def run_or_exit(command, what, tail=3000):
    """Runs `command`, capturing its output; on failure prints the output's
    last `tail` characters and exits naming `what`."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-tail:])
        sys.exit(f"failed ({done.returncode}): {what}")
    return done.stdout


def pyplot(exit_if_missing=True):
    """matplotlib.pyplot drawing to files. Without matplotlib: exits saying
    how to get it, or raises ImportError with that advice."""
    try:
        import matplotlib
    except ImportError as e:
        advice = (f"the plots need matplotlib ({e}): apt install python3-matplotlib "
                  "(bench/experiments/setup_baseline.sh does) and run this script with /usr/bin/python3")
        if exit_if_missing:
            sys.exit(f"{os.path.basename(sys.argv[0])}: {advice}")
        raise ImportError(advice) from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
