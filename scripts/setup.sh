#!/usr/bin/env bash
# Installs what murmur needs on Debian bookworm, and nothing that is already
# there. Idempotent; run as root. The CUDA toolkit is optional and is not
# installed here: when /usr/local/cuda exists, the build uses it.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  libfabric-dev libfabric-bin libibverbs-dev rdma-core
  libboost-dev capnproto libcapnp-dev libspdlog-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev zlib1g-dev nlohmann-json3-dev
  libxxhash-dev libssl-dev iperf3
  dataset-fashion-mnist
  python3-dev python3-venv python3-pip python3-numpy python3-torch python3-pytest
  openmpi-bin slurmctld slurmd slurm-client munge
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${missing[*]}; run this script as root (or install them with apt-get)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The Python package (docs/python.md) is built with nanobind and, for
# `pip install .`, scikit-build-core: neither is packaged in bookworm, so
# they come from PyPI at pinned versions, installed for Debian's
# /usr/bin/python3 (into /usr/local/lib/python3.*/dist-packages, which a
# venv made with --system-site-packages sees too). The python3 first on
# PATH may be another interpreter; this one has python3-torch.
python_pins=(nanobind==2.9.2 scikit-build-core==0.11.6 pathspec==1.1.1 packaging==26.4)
installed_pins=$(/usr/bin/python3 -m pip list --format=freeze 2>/dev/null | tr '_A-Z' '-a-z' || true)
if ! grep -qx "scikit-build-core==0.11.6" <<<"$installed_pins" || ! grep -qx "nanobind==2.9.2" <<<"$installed_pins"; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${python_pins[*]} for /usr/bin/python3; run this script as root" >&2
    exit 1
  fi
  echo "setup: installing ${python_pins[*]} for /usr/bin/python3"
  # --break-system-packages: bookworm marks its Python as externally managed;
  # pip's files go to /usr/local, apt's stay untouched.
  /usr/bin/python3 -m pip install --quiet --break-system-packages --no-warn-script-location "${python_pins[@]}"
else
  echo "setup: nanobind and scikit-build-core present"
fi
