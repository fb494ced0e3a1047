#!/usr/bin/env bash
# Checks that every C++ and CUDA file follows .clang-format; prints the
# offending files and lines. `scripts/check-format.sh --fix` rewrites them.
#
# The layout depends on clang-format's major version, so the check runs
# only with the one Debian bookworm ships (14, installed by setup.sh); with
# none or another it exits 77, which ctest reports as skipped, and says why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

want=14
tool=""
for candidate in clang-format-$want clang-format; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" --version | grep -Eq "version $want\."; then
    tool=$candidate
    break
  fi
done
if [ -z "$tool" ]; then
  echo "check-format: clang-format $want not found (scripts/setup.sh installs it); not checked" >&2
  exit 77
fi

if git rev-parse --git-dir >/dev/null 2>&1; then
  # New files too (not yet added), so that --fix before a commit sees them.
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cc' '*.cu' '*.cuh')
else
  mapfile -t files < <(find src include kernels tests bench examples \
    -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' | sort)
fi

if [ "${1:-}" = "--fix" ]; then
  "$tool" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

if ! "$tool" --dry-run --Werror "${files[@]}"; then
  echo "check-format: the files above do not follow .clang-format; fix with scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format"
