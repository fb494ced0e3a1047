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
  libxxhash-dev
  dataset-fashion-mnist
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
