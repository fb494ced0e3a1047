#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${MURMUR_BUILD_DIR:-$root/build}
# Multi-process tests start several peers each; one test at a time keeps the
# two-core CI machine from timing them out.
cd "$build" && ctest --output-on-failure --timeout 600
