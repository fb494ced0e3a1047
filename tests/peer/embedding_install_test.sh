#!/usr/bin/env bash
# Installs murmur into a fresh prefix, builds examples/embedding against it
# twice (find_package(murmur) and pkg-config), and runs each build as a job
# of 4 peers under the installed murmur-run. Proves that what a user gets
# from `cmake --install` is enough to embed murmur: headers, libraries,
# package files and RUNPATHs, with nothing taken from the build tree.
#
#   embedding_install_test.sh <murmur build dir> <murmur source dir>
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <murmur build dir> <murmur source dir>" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
ranks=4
min_accuracy=0.9

work=$(mktemp -d "${TMPDIR:-/tmp}/murmur-embedding.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "embedding_install_test: FAILED: $*" >&2
  exit 1
}

# The installed programs must find their libraries through RUNPATH alone.
unset LD_LIBRARY_PATH

echo "== cmake --install $build_dir --prefix $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install of $build_dir into $prefix failed (log above)"; }
for path in bin/murmur-run include/murmur/peer.h lib/cmake/murmur/murmurConfig.cmake lib/pkgconfig/murmur.pc; do
  [[ -e $prefix/$path ]] || fail "the install has no $path"
done

# No installed program or library may point back at the build tree.
while IFS= read -r -d '' file; do
  if readelf -d "$file" 2>/dev/null | grep -E 'R(UN)?PATH' | grep -qF "$build_dir"; then
    fail "$file has an RPATH into the build tree: $(readelf -d "$file" | grep -E 'R(UN)?PATH')"
  fi
done < <(find "$prefix/bin" "$prefix/lib" -type f \( -name '*.so*' -o -perm -u+x \) -print0)

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

echo "== find_package(murmur): configure and build examples/embedding"
cmake -S "$source_dir/examples/embedding" -B "$work/cmake-build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; fail "configuring examples/embedding with CMAKE_PREFIX_PATH=$prefix failed"; }
cmake --build "$work/cmake-build" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "building examples/embedding against $prefix failed"; }
cmake_binary=$work/cmake-build/logistic_regression

# The rest of the export set: every murmur:: target links (its
# find_dependency()s are all there) and every installed header compiles,
# so no installed header includes one that was left out.
echo "== find_package(murmur): every exported target and installed header"
mkdir -p "$work/export-check"
cat >"$work/export-check/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(murmur_export_check LANGUAGES CXX)
find_package(murmur REQUIRED)
get_directory_property(imported IMPORTED_TARGETS)
list(FILTER imported INCLUDE REGEX "^murmur::")
if(NOT "murmur::peer" IN_LIST imported)
  message(FATAL_ERROR "find_package(murmur) defines no murmur::peer (it defines: ${imported})")
endif()
add_executable(all_targets all_headers.cc)
target_compile_features(all_targets PRIVATE cxx_std_20)
target_link_libraries(all_targets PRIVATE ${imported})
CMAKE
(cd "$prefix/include" && find murmur -name '*.h' | sort | sed -E 's|^murmur/(.*)$|#include "\1"|') \
  >"$work/export-check/all_headers.cc"
echo 'int main() { return 0; }' >>"$work/export-check/all_headers.cc"
{ cmake -S "$work/export-check" -B "$work/export-check/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" &&
  cmake --build "$work/export-check/build"; } >"$work/export-check.log" 2>&1 ||
  { cat "$work/export-check.log" >&2; fail "a project linking every murmur:: target and including every installed header does not build"; }

echo "== pkg-config: compile examples/embedding/logistic_regression.cc"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pc_flags=$(pkg-config --cflags --libs murmur) || fail "pkg-config --cflags --libs murmur failed with PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
mkdir -p "$work/pc-build"
pc_binary=$work/pc-build/logistic_regression
# shellcheck disable=SC2086  # the flags are words
c++ -std=c++17 -O2 "$source_dir/examples/embedding/logistic_regression.cc" -o "$pc_binary" $pc_flags ||
  fail "c++ with pkg-config flags ($pc_flags) failed"

# Every murmur library the binaries load must come from the prefix.
real_prefix=$(realpath "$prefix")
for binary in "$cmake_binary" "$pc_binary" "$prefix/bin/murmur-run"; do
  ldd_out=$(ldd "$binary")
  if grep -q 'not found' <<<"$ldd_out"; then fail "ldd $binary: a library is not found:"$'\n'"$ldd_out"; fi
  murmur_libs=$(awk '$1 ~ /^libmurmur_/ {print $3}' <<<"$ldd_out")
  [[ -n $murmur_libs ]] || fail "ldd $binary lists no libmurmur_* library:"$'\n'"$ldd_out"
  while IFS= read -r lib; do
    [[ $(realpath "$lib") == "$real_prefix"/* ]] || fail "ldd $binary: $lib is not under $prefix"
  done <<<"$murmur_libs"
  echo "ldd $(basename "$(dirname "$binary")")/$(basename "$binary"): $(wc -l <<<"$murmur_libs") murmur libraries, all from $prefix"
done

# run_job <binary> <algorithm> [extra flags...]: 4 peers under the installed
# murmur-run; every rank reports, and the averaged model is accurate.
run_job() {
  local binary=$1 algorithm=$2
  shift 2
  local log=$work/job-$algorithm.log
  echo "== murmur-run -np $ranks -- $binary --algorithm $algorithm $*"
  local status=0
  env -u LD_LIBRARY_PATH "$prefix/bin/murmur-run" -np "$ranks" --timeout 120 -- \
    "$binary" --algorithm "$algorithm" "$@" >"$log" 2>&1 || status=$?
  cat "$log"
  [[ $status -eq 0 ]] || fail "the $algorithm job exited with status $status"
  local rank line accuracy
  for ((rank = 0; rank < ranks; ++rank)); do
    line=$(grep -E "rank $rank: own accuracy [0-9.]+, averaged model accuracy [0-9.]+" "$log" | head -n 1) ||
      fail "the $algorithm job: rank $rank printed no accuracy line"
    accuracy=$(sed -E 's/.*averaged model accuracy ([0-9.]+).*/\1/' <<<"$line")
    awk -v a="$accuracy" -v m="$min_accuracy" 'BEGIN { exit !(a > m) }' ||
      fail "the $algorithm job: rank $rank's averaged model accuracy $accuracy is not above $min_accuracy"
  done
}

run_job "$cmake_binary" choco --compress topk:0.1
run_job "$pc_binary" dpsgd
echo "embedding_install_test: passed"
