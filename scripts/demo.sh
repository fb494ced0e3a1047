#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${MURMUR_BUILD_DIR:-$root/build}
"$build/examples/murmur-fabric-demo" -n 8 --mib 8 --rounds 10
