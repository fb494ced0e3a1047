#!/usr/bin/env bash
# Sanitizer lanes: builds the tree with one sanitizer in a build folder of
# its own and runs the test suite there.
#
#   scripts/check.sh asan [ctest args...]   AddressSanitizer + UBSan (MURMUR_SANITIZE), build-asan/
#   scripts/check.sh ubsan [ctest args...]  the same lane: UBSan is built into asan's
#   scripts/check.sh tsan [ctest args...]   ThreadSanitizer (MURMUR_SANITIZE_THREAD), build-tsan/
#
# UBSan has no lane of its own: it combines with ASan, and a second whole
# build of the tree costs more than an hour on two cores (docs/testing.md).
#
# Without ctest arguments the whole suite runs (ctest -L unit -j2, then the
# rest one test at a time, as scripts/test.sh). Extra arguments replace that
# with one ctest call, e.g. `scripts/check.sh tsan -R 'Failure|PeerDeath'`.
# Every report stops its process (halt_on_error), so a finding fails its
# test; reports also go to build-<lane>/sanitizer/ (log_path), where the
# tests that expect a peer to fail would otherwise hide them. The script
# lists those files at the end and fails if there are any.
# MURMUR_JOBS: build parallelism (default: all cores).
# MURMUR_CHECK_TARGETS: build only these targets (space-separated), e.g. the
# fabric tests and their peer programs first when the whole tree is too slow.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lane=${1:-}
shift || true
jobs=${MURMUR_JOBS:-$(nproc)}
case $lane in
  asan | ubsan)
    lane=asan
    options=(-DMURMUR_SANITIZE=ON)
    ;;
  tsan) options=(-DMURMUR_SANITIZE_THREAD=ON) ;;
  *)
    echo "usage: scripts/check.sh asan|ubsan|tsan [ctest args...]" >&2
    exit 2
    ;;
esac
build=$root/build-$lane
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMURMUR_CUDA=OFF -DMURMUR_BENCH=OFF \
  "${launcher[@]}" "${options[@]}" >/dev/null
read -r -a targets <<<"${MURMUR_CHECK_TARGETS:-}"
cmake --build "$build" -j "$jobs" ${targets[@]:+--target "${targets[@]}"}
built=$(date +%s)

reports=$build/sanitizer
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:log_path=$reports/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# die_after_fork=0: the launcher and LocalJob fork peers from threaded processes.
# suppressions: reports that are not races in murmur, each with its reason.
export TSAN_OPTIONS="halt_on_error=1:die_after_fork=0:log_path=$reports/tsan:suppressions=$root/scripts/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
# OpenBLAS with one thread, as murmur-peer runs it (MURMUR_BLAS_THREADS):
# its own thread pool is not built with TSan, which cannot see it hand a
# matrix from the caller to its workers, and reported each model test that
# multiplies (`sgemm_beta` in an OpenBLAS thread against the caller's
# write; docs/testing.md).
[[ $lane == tsan ]] && export OPENBLAS_NUM_THREADS=1

status=0
cd "$build"
if [[ $# -gt 0 ]]; then
  ctest --output-on-failure --timeout 900 "$@" || status=$?
else
  # Under TSan the `slow` tests (64 MiB exchanges among up to 8 peers) need
  # about 2.5 GB of memory per peer: eight of them were OOM-killed on a
  # 23 GB machine (docs/testing.md). That lane leaves them out.
  # The Python tests run under asan with the runtimes preloaded
  # (tests/python/CMakeLists.txt). Under TSan they are left out: the
  # extension is dlopen'd, and TSan does not see a finished thread's
  # thread-local block of a dlopen'd library being freed by glibc after the
  # thread's last use of it. With the runtime preloaded, its first report on
  # test_peer.py is exactly that (glibc's _dl_deallocate_tls against asio's
  # thread-local call stack in a finished rendezvous client thread).
  unit=(-L unit)
  rest=(-LE unit)
  if [[ $lane == tsan ]]; then
    unit=(-L unit -LE python)
    rest=(-LE 'unit|slow|python')
  fi
  ctest --output-on-failure --timeout 900 "${unit[@]}" -j2 || status=$?
  ctest --output-on-failure --timeout 900 "${rest[@]}" || status=$?
fi
ran=$(date +%s)
found=$(find "$reports" -type f | wc -l)
echo "check.sh $lane: build $((built - start)) s, tests $((ran - built)) s, $found sanitizer report file(s) in $reports"
find "$reports" -type f | sed 's/^/  /'
[[ $found == 0 ]] || status=1
exit $status
