#!/usr/bin/env bash
# What other tools get on this host's loopback, to set beside fabric_bench's
# figures (docs/fabric-performance.md, "Cross-checks"): iperf3's one TCP
# stream (the socket baseline's own measure) and libfabric's fi_pingpong
# (Debian's providers without murmur) for tcp;ofi_rxm and shm, at 8 bytes
# and 4 MiB. Needs iperf3 and libfabric-bin (scripts/setup.sh installs both).
# Prints one line per figure; exits non-zero if a tool fails.
set -euo pipefail

seconds=${1:-3}
port=$((20000 + RANDOM % 20000))

iperf3 -s -p "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# iperf3 -J exits 0 even when it cannot connect: wait for the port instead.
for _ in $(seq 50); do
  if (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then break; fi
  sleep 0.1
done
iperf3 -c 127.0.0.1 -p "$port" -l 1M -t "$seconds" -J >/tmp/murmur-iperf3.$$ 2>/dev/null || true
/usr/bin/python3 - /tmp/murmur-iperf3.$$ <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
if "error" in result:
    sys.exit("iperf3: " + result["error"])
print(f"iperf3 tcp stream, 1 MiB writes: {result['end']['sum_received']['bits_per_second'] / 8e6:.0f} MB/s")
PY
rm -f /tmp/murmur-iperf3.$$

# fi_pingpong: a server and a client on loopback; its usec/xfer is half a
# round trip, MB/sec counts both directions' bytes.
pingpong() {
  local provider=$1 bytes=$2 iterations=$3 pp_port=$((20000 + RANDOM % 20000))
  fi_pingpong -p "$provider" -e rdm -B "$pp_port" -I "$iterations" -S "$bytes" >/dev/null 2>&1 &
  local pp_server=$!
  sleep 0.3
  local line
  line=$(fi_pingpong -p "$provider" -e rdm -P "$pp_port" -I "$iterations" -S "$bytes" 127.0.0.1 | tail -1)
  wait "$pp_server"
  # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
  read -r _ _ _ _ _ mbps usec _ <<<"$line"
  echo "fi_pingpong $provider, $bytes bytes: round trip $(awk -v u="$usec" 'BEGIN { printf "%.1f", 2 * u }') us, $mbps MB/s"
}
pingpong "tcp;ofi_rxm" 8 1000
pingpong "tcp;ofi_rxm" 4194304 100
pingpong shm 8 1000
pingpong shm 4194304 100
