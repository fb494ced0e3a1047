#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage) in build-fuzz/ (or
# $MURMUR_FUZZ_BUILD_DIR) and runs them one after another.
#
#   scripts/fuzz.sh                 every harness, 60 s each
#   scripts/fuzz.sh NAME [SECONDS]  one harness (NAME: compress_decode, ... ;
#                                   "all" for every one), default 60 s
#   scripts/fuzz.sh --list          the harnesses
#
# Seeds come from tests/fuzz/corpus/NAME (read only); what the fuzzer finds
# new goes to build-fuzz/corpus/NAME, crashing inputs to
# build-fuzz/crashes/NAME/, the log to build-fuzz/logs/NAME.log. A crash is
# fixed in the code and its input copied into tests/fuzz/corpus/NAME/, where
# the ctest fuzz_replay_NAME replays it in the normal build
# (docs/testing.md, "Fuzzing"). Exit status: 0 when no harness crashed.
# MURMUR_JOBS: build parallelism (default: all cores). MURMUR_FUZZ_NO_BUILD=1:
# run what build-fuzz holds (while another harness is being built there).
# MURMUR_FUZZ_RUNS=N: stop each harness after N executions instead (SECONDS
# then only caps the time), e.g. the million issue 20 asks of every harness:
#   MURMUR_FUZZ_RUNS=1000000 scripts/fuzz.sh rendezvous_server 86400
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MURMUR_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${MURMUR_JOBS:-$(nproc)}
harnesses=$(cd "$root/tests/fuzz" && grep -l LLVMFuzzerTestOneInput ./*.cc | grep -v replay_main | sed 's|^\./||; s|\.cc$||' | sort)

name=${1:-all}
seconds=${2:-60}
if [[ $name == --list ]]; then
  echo "$harnesses"
  exit 0
fi
if [[ $name == all ]]; then
  selected=$harnesses
elif grep -qx "$name" <<<"$harnesses"; then
  selected=$name
else
  echo "fuzz.sh: no harness '$name'; one of:" $harnesses >&2
  exit 2
fi

cxx=${MURMUR_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
cc=${MURMUR_FUZZ_CC:-$(command -v clang-14 || command -v clang || true)}
if [[ -z $cxx || -z $cc ]]; then
  echo "fuzz.sh: libFuzzer needs clang (scripts/setup.sh installs clang 14)" >&2
  exit 2
fi
# Boost.Asio (1.81) looks for clang's coroutines in libc++'s
# <experimental/coroutine>; with libstdc++ they are in <coroutine>, which
# clang 14 supports: say so. UBSan's "function" check is left out: clang 14
# cannot emit it for the split parts of a coroutine ("Cannot represent a
# difference across sections"); gcc has no such check anyway.
# (So the sanitizers are set here, after which -fno-sanitize=function can
# come, rather than by MURMUR_SANITIZE.)
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function -fno-omit-frame-pointer"
flags+=" -DBOOST_ASIO_HAS_CO_AWAIT=1"
if [[ -z ${MURMUR_FUZZ_NO_BUILD:-} ]]; then
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" \
  -DMURMUR_FUZZ=ON -DMURMUR_SANITIZE=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined \
  -DMURMUR_CUDA=OFF -DMURMUR_BENCH=OFF >/dev/null
targets=()
for h in $selected; do targets+=("fuzz_$h"); done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
fi

# UBSan reports stop the run (they are findings, like ASan's).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
status=0
printf '%-20s %10s %8s %7s %7s %s\n' harness execs exec/s cov ft crashes
for h in $selected; do
  mkdir -p "$build/corpus/$h" "$build/crashes/$h" "$build/logs"
  log=$build/logs/$h.log
  rc=0
  "$build/tests/fuzz/fuzz_$h" -max_total_time="$seconds" ${MURMUR_FUZZ_RUNS:+-runs="$MURMUR_FUZZ_RUNS"} \
    -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$h/" "$build/corpus/$h" "$root/tests/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
  # (A run that crashes at once prints no coverage line: `|| true`.)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$({ grep -o 'cov: [0-9]*' "$log" || true; } | tail -1 | cut -d' ' -f2)
  ft=$({ grep -o 'ft: [0-9]*' "$log" || true; } | tail -1 | cut -d' ' -f2)
  crashes=$(find "$build/crashes/$h" -type f | wc -l)
  printf '%-20s %10s %8s %7s %7s %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
  if [[ $rc != 0 || $crashes != 0 ]]; then
    status=1
    echo "  $h: exit $rc; log $log; inputs in $build/crashes/$h/" >&2
  fi
done
exit $status
