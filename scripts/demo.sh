#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains 8 peers on this
# machine (exponential graph, CHOCO-SGD with top-1% compression, an MLP on
# Fashion-MNIST), then prints the result table. A few minutes on two cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${MURMUR_BUILD_DIR:-$root/build}
"$build/src/peer/launcher/murmur-run" -np 8 --summary "$build/main-job-summary.json" -- \
  "$build/src/peer/train/murmur-peer" --topology exponential --algorithm choco --compress topk:0.01 \
  --model mlp --epochs 5
echo "summary: $build/main-job-summary.json"
