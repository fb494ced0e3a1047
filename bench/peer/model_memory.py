#!/usr/bin/env python3
"""Peak memory per rank of every gossip algorithm and compressor on one large
model (docs/models.md, "Memory per algorithm").

Each case is a murmur-run job of 3 ranks of bench/peer/model_memory_peer on
a ring (two neighbours each), --steps steps; a rank's "state" is its peak
resident memory minus its resident memory once the model (and, for the
gradient-averaging methods, the gradient buffer) was allocated and the Peer
joined, given in MiB and in multiples of the model's size, read after the
steps and before the collectives that check the result (consensus
distance; its own model-sized buffers are the last column). The table takes
the largest rank. A case that fails (a rank exits non-zero, or a value is
not finite) is a row that says so.

    bench/peer/model_memory.py [--floats 100000000] [--steps 3] [--build build] [--cases choco:topk:0.01,...]
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

ALGORITHMS = ["dpsgd", "choco", "sgp", "adpsgd", "allreduce", "topk-allreduce", "local-sgd", "bsp-a2a", "wfbp-a2a",
              "mg-wfbp", "bytescheduler-a2a", "bsp-ps", "wfbp-ps", "bytescheduler-ps", "signsgd", "topk-sgd"]
CHOCO_COMPRESSORS = ["identity", "fp16", "bf16", "sign", "qsgd:16", "topk:0.01", "randk:0.01", "powersgd:4"]


def default_cases():
    cases = []
    for algorithm in ALGORITHMS:
        if algorithm == "choco":
            cases += [(algorithm, c) for c in CHOCO_COMPRESSORS]
        elif algorithm == "topk-allreduce":
            cases.append((algorithm, "topk:0.01"))
        else:
            cases.append((algorithm, "identity"))
    return cases


def run_case(build, algorithm, compressor, floats, steps, ranks, transport):
    murmur_run = os.path.join(build, "src", "peer", "launcher", "murmur-run")
    peer = os.path.join(build, "bench", "peer", "model_memory_peer")
    env = dict(os.environ, MURMUR_LOG_LEVEL="warn", OMP_NUM_THREADS="1")
    start = time.monotonic()
    try:
        proc = subprocess.run([murmur_run, "-np", str(ranks), "--", peer, "--floats", str(floats), "--algorithm",
                               algorithm, "--compressor", compressor, "--steps", str(steps), *transport],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return [], False, "no result within 30 minutes", time.monotonic() - start
    seconds = time.monotonic() - start
    rows = []
    for line in proc.stdout.splitlines():
        if '"peak_rss_mib"' in line:
            rows.append(json.loads(line[line.index("{"):]))
    # Every rank sent something and kept finite values (the peer checks).
    ok = proc.returncode == 0 and len(rows) == ranks and all(r["finite"] and r["bytes_sent"] > 0 for r in rows)
    failure = "" if ok else (proc.stdout.strip().splitlines() or ["no output"])[-1][:200]
    return rows, ok, failure, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--floats", type=int, default=100_000_000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=3)
    parser.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    parser.add_argument("--backend", help="libfabric or asio (default: murmur's)")
    parser.add_argument("--provider", help="libfabric provider (default: murmur's choice; shm on one host)")
    parser.add_argument("--cases", help="comma-separated algorithm:compressor (default: every algorithm, "
                        "choco with every compressor)")
    args = parser.parse_args()
    cases = default_cases()
    if args.cases:
        cases = [tuple(c.split(":", 1)) if ":" in c else (c, "identity") for c in args.cases.split(",")]
    transport = (["--backend", args.backend] if args.backend else []) + \
        (["--provider", args.provider] if args.provider else [])
    print(f"{' '.join(transport) or 'default transport'}; {args.ranks} ranks, ring, {args.floats:,} floats ({args.floats * 4 / 2**20:.0f} MiB), "
          f"{args.steps} steps; state = peak RSS - RSS with the model and buffers allocated, largest rank")
    print()
    print("| algorithm | compressor | model MiB | gradient MiB | state MiB | state / model | peak RSS MiB | "
          "peak with collectives MiB | job s | |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    failed = 0
    for algorithm, compressor in cases:
        rows, ok, failure, seconds = run_case(args.build, algorithm, compressor, args.floats, args.steps, args.ranks,
                                                transport)
        if not rows:
            failed += 1
            print(f"| {algorithm} | {compressor} | | | | | | | {seconds:.0f} | FAILED: {failure} |", flush=True)
            continue
        worst = max(rows, key=lambda r: r["state_mib"])
        note = "" if ok else f"FAILED: {failure}"
        failed += not ok
        print(f"| {algorithm} | {compressor} | {worst['model_mib']:.0f} | {worst['gradient_mib']:.0f} | "
              f"{worst['state_mib']:.0f} | {worst['state_per_model']:.2f} | {worst['peak_rss_mib']:.0f} | "
              f"{worst['peak_with_collectives_mib']:.0f} | {seconds:.0f} | {note} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
