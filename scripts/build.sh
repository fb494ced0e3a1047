#!/usr/bin/env bash
# Configures and builds murmur in build/ (or $MURMUR_BUILD_DIR). Extra
# arguments go to cmake's configure step, e.g. -DMURMUR_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MURMUR_BUILD_DIR:-$root/build}
jobs=${MURMUR_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build" -j "$jobs"
