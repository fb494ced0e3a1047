#!/usr/bin/env bash
# Ctrl-C in the workers of a 2-rank murmur-run job of the PyTorch example
# (docs/python.md, "Ctrl-C and other signals"): after rank 0's first epoch
# line, SIGINT to one worker, 3 s later to the other. Prints, per try, how
# murmur-run saw each rank end and how long after the first SIGINT the job
# was over. A crash shows as "killed by signal 11".
#
#   bench/python/interrupt_job.sh [TRIES] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tries=${1:-10}
build=${2:-$root/build}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
for try in $(seq 1 "$tries"); do
  PYTHONPATH="$build/python" MURMUR_LOG_LEVEL=warn OMP_NUM_THREADS=1 "$build/src/peer/launcher/murmur-run" -np 2 -- \
    /usr/bin/python3 "$root/examples/pytorch/train_fashion_mnist.py" --algorithm choco --compress topk:0.01 \
    --epochs 5 > "$log/run.log" 2>&1 &
  job=$!
  until grep -q "epoch 1:" "$log/run.log" || ! kill -0 $job 2> /dev/null; do sleep 0.2; done
  mapfile -t workers < <(pgrep -P $job | sort -n)
  first=$(date +%s.%N)
  kill -INT "${workers[0]}" 2> /dev/null || true
  sleep 3
  kill -INT "${workers[1]}" 2> /dev/null || true
  status=0
  wait $job || status=$?
  over=$(echo "$(date +%s.%N) - $first" | bc)
  echo "try $try: murmur-run exit $status, over ${over%???????} s after the first SIGINT"
  grep '^murmur-run: rank' "$log/run.log" | sed 's/; last stderr.*//; s/^murmur-run:/   /'
done
