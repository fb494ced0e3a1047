#!/usr/bin/env bash
# Runs the chosen tests N times while a busy loop keeps one core loaded, and
# prints how often each passed and failed. A test that fails once in many
# runs is a bug with a cause; this is how to make it show (docs/testing.md).
#
#   scripts/stress-tests.sh [N] [ctest -R pattern]
#
# N defaults to 20, the pattern to the failure and peer-death tests. The
# build directory is build/ (or $MURMUR_BUILD_DIR) and must be built. The
# output of every failed run is kept under $MURMUR_STRESS_LOGS (default: a
# new folder in /tmp, named at the end). MURMUR_STRESS_LOAD=0 runs without
# the busy loop. Exit status: 0 if every run passed, 1 otherwise, 2 on bad
# arguments.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MURMUR_BUILD_DIR:-$root/build}
runs=${1:-20}
pattern=${2:-'Failure\.|PeerDeath\.|InProcess\.Dead|ChocoTrialRatioLastsOneRound'}
load=${MURMUR_STRESS_LOAD:-1}

if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "stress-tests: N must be a positive integer, got '$runs'" >&2
  exit 2
fi
if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "stress-tests: no ctest tree in $build; build first (scripts/build.sh)" >&2
  exit 2
fi
tests=$(cd "$build" && ctest -N -R "$pattern" | sed -n 's/^ *Test *#[0-9]*: //p')
if [ -z "$tests" ]; then
  echo "stress-tests: no test matches '$pattern' in $build" >&2
  exit 2
fi
logs=${MURMUR_STRESS_LOGS:-$(mktemp -d /tmp/murmur-stress.XXXXXX)}
mkdir -p "$logs"

busy_pid=
cleanup() { if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ "$load" != 0 ]; then
  # The load under which the races were seen: the last core spinning. A
  # deliberate busy loop; murmur itself never polls.
  last_core=$(( $(nproc) - 1 ))
  if command -v taskset >/dev/null; then
    taskset -c "$last_core" bash -c 'while :; do :; done' &
  else
    bash -c 'while :; do :; done' &
  fi
  busy_pid=$!
fi

declare -A passed failed
while read -r t; do passed[$t]=0; failed[$t]=0; done <<<"$tests"
start=$(date +%s)
for ((i = 1; i <= runs; i++)); do
  out="$logs/run-$i.log"
  (cd "$build" && ctest -R "$pattern" --timeout 600 --output-on-failure >"$out" 2>&1) || true
  while read -r t; do
    # ctest prints "  N/M Test  #K: NAME ....   Passed   1.23 sec".
    if grep -F -- "#" "$out" | grep -F -- ": $t ." | grep -q ' Passed '; then
      passed[$t]=$((passed[$t] + 1))
    else
      failed[$t]=$((failed[$t] + 1))
      echo "run $i: $t failed (log: $out)"
    fi
  done <<<"$tests"
  if grep -q '^100% tests passed' "$out"; then rm -f "$out"; fi
done

total_failed=0
echo
echo "stress-tests: $runs run(s) of each test, load=$load, $(( $(date +%s) - start )) s"
printf '%8s %8s  %s\n' passed failed test
while read -r t; do
  printf '%8d %8d  %s\n' "${passed[$t]}" "${failed[$t]}" "$t"
  total_failed=$((total_failed + failed[$t]))
done <<<"$tests"
echo "logs of failed runs: $logs"
[ "$total_failed" -eq 0 ]
