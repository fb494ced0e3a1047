#!/bin/sh
# Installs what the DDP baseline (ddp_mlp.py) and the plots need from
# Debian: PyTorch 1.13 with gloo, NumPy, Matplotlib, and the Fashion-MNIST
# copy murmur reads. Idempotent: a package already installed is left alone.
#
# The scripts run Debian's interpreter, /usr/bin/python3, by its full path:
# a pyenv python3 may come first on PATH and sees none of these packages.
set -eu

packages="python3-torch python3-numpy python3-matplotlib dataset-fashion-mnist iproute2"
missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -n "$missing" ]; then
  echo "setup_baseline: installing$missing"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup_baseline: needs root for apt-get (run it with sudo)" >&2
    exit 1
  fi
  apt-get update -q
  # shellcheck disable=SC2086  # word splitting is wanted: one package a word
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
else
  echo "setup_baseline: all installed ($packages)"
fi

/usr/bin/python3 -c 'import torch, torch.distributed as d, numpy, matplotlib; \
assert d.is_gloo_available(), "torch has no gloo backend"; \
print("setup_baseline: torch", torch.__version__, "numpy", numpy.__version__, "gloo ok")'
