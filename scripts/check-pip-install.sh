#!/usr/bin/env bash
# `pip install .` as a user does it, checked end to end: clones this
# repository's HEAD into an empty temporary folder, installs it into a
# fresh venv that sees Debian's torch, copies the PyTorch example out of the
# source tree, runs it on 4 ranks with the venv's murmur-run and python
# (no PYTHONPATH, nothing from the clone's build) and fails unless the
# averaged model reaches 70% (a 4-rank run of this size gives about 77%).
#
#   scripts/check-pip-install.sh            # about 15 minutes on 2 cores
#
# Not part of scripts/test.sh: the install compiles murmur's libraries once
# more, statically (docs/python.md, "Into a virtual environment"). Needs
# what scripts/setup.sh installs; downloads nothing (--no-build-isolation).
# Leaves nothing behind unless MURMUR_KEEP_PIP_CHECK=1 (then it says where).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/murmur-pip-check.XXXXXX)
if [[ ${MURMUR_KEEP_PIP_CHECK:-0} == 1 ]]; then
  trap 'echo "check-pip-install: left in $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
start=$(date +%s)
git clone -q "$root" "$work/murmur"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
(cd "$work/murmur" && "$work/venv/bin/pip" install -q --no-build-isolation .)
echo "check-pip-install: installed in $(($(date +%s) - start)) s"

mkdir "$work/run"
cp "$work/murmur/examples/pytorch/"*.py "$work/run/"
rm -rf "$work/murmur"  # nothing of the source tree is left to import from
cd "$work/run"
env -u PYTHONPATH "$work/venv/bin/murmur-run" -np 4 -- "$work/venv/bin/python" train_fashion_mnist.py \
  --epochs 2 --train-examples 8000 --test-examples 2000 --batch-size 32 --summary "$work/run/result.json" \
  > "$work/run/output.txt" 2>&1 || {
  cat "$work/run/output.txt" >&2
  echo "check-pip-install: the example failed under the venv's murmur-run" >&2
  exit 1
}
"$work/venv/bin/python" - "$work/run/result.json" << 'PY'
import json, sys
import murmur
result = json.load(open(sys.argv[1]))
where = murmur.__file__
if "/venv/" not in where:
    sys.exit(f"check-pip-install: murmur was imported from {where}, not the venv")
accuracy = result["averaged_accuracy"]
print(f"check-pip-install: 4 ranks, averaged model {100 * accuracy:.2f}% (murmur from {where})")
if accuracy < 0.70:
    sys.exit(f"check-pip-install: averaged model {100 * accuracy:.2f}% < 70%")
PY
echo "check-pip-install: passed in $(($(date +%s) - start)) s"
