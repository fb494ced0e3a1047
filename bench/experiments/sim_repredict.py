#!/usr/bin/env python3
"""murmur-sim's busy predictions of a sim_vs_runtime.py run made again from
that run's saved inputs (each repeat's <profile>-split.profile and
<profile>-busy.cluster), by one or more murmur-sim binaries: how a change to
the simulator moves each row, with the probes and compute profiles held
fixed (docs/sim.md, "murmur-sim against murmur's own runs").

    bench/experiments/sim_repredict.py --sim /tmp/murmur-sim-before --sim build/src/sim/murmur-sim \\
        --knobs '--bytescheduler-partition 4000 --bytescheduler-credit 16000 --ps-partition 4000' /tmp/svr-deep

--knobs: the partition flags the run's jobs used (sim_vs_runtime.py passes
the same to murmur-sim). Prints, per row, the measured median and each
binary's median prediction over the repeats with its error, then each
binary's median |error|.
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_vs_runtime  # noqa: E402


def predict(binary, profile_file, cluster_file, method, knobs):
    """One binary's iteration time in ms for one method."""
    sim_name = sim_vs_runtime.SIM_NAMES[method]
    command = [binary, "--model", profile_file, "--cluster", cluster_file, "--method", sim_name, "--csv", *knobs]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{binary} failed ({done.returncode}): {done.stderr.strip()}")
    rows = {r["method"]: float(r["iteration_ms"]) for r in csv.DictReader(io.StringIO(done.stdout))}
    return rows[sim_name]


def repeats_of(run, model):
    """The run's repeat directories of `model`, in order."""
    prefix = sim_vs_runtime.model_tag(model) + "-"
    found = sorted((d for d in os.listdir(run) if d.startswith(prefix) and d[len(prefix):].isdigit()),
                   key=lambda d: int(d[len(prefix):]))
    if not found:
        sys.exit(f"{run}: no repeat directory {prefix}N (is it a sim_vs_runtime.py --out directory?)")
    return [os.path.join(run, d) for d in found]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="sim_vs_runtime.py --out directories")
    p.add_argument("--sim", action="append", required=True, help="a murmur-sim binary (repeat for several)")
    p.add_argument("--knobs", default="", help="the jobs' partition flags, as murmur-sim takes them")
    args = p.parse_args()
    knobs = args.knobs.split()
    errors = {sim: [] for sim in args.sim}
    for run in args.runs:
        path = os.path.join(run, "sim_vs_runtime.json")
        if not os.path.exists(path):
            sys.exit(f"{run}: no sim_vs_runtime.json (is it a sim_vs_runtime.py --out directory?)")
        with open(path) as f:
            rows = json.load(f)
        for row in rows:
            measured = row["measured_ms"]
            cells = []
            for sim in args.sim:
                predicted = statistics.median(
                    predict(sim, os.path.join(base, f"{row['profile']}-split.profile"),
                            os.path.join(base, f"{row['profile']}-busy.cluster"), row["method"], knobs)
                    for base in repeats_of(run, row["model"]))
                error = (predicted - measured) / measured
                errors[sim].append(abs(error))
                cells.append(f"{predicted:.1f} ({100 * error:+.1f}%)")
            print(f"{run} | {row['profile']} | {row['method']} | {measured:.1f} | " + " | ".join(cells))
    for sim, values in errors.items():
        print(f"{sim}: busy median |error| {100 * statistics.median(values):.1f}% (max {100 * max(values):.1f}%, "
              f"{len(values)} rows)")


if __name__ == "__main__":
    main()
