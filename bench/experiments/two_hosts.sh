#!/bin/sh
# Two emulated hosts with two peers each, and the link each pair of peers
# uses: shm inside a host, tcp between them, in one job.
#
#   bench/experiments/two_hosts.sh [BUILD] [PROVIDER...]    (needs root)
#
# netns.sh's two namespaces murmur-ns0/1 (10.77.0.1 and .2 on a bridge,
# unshaped) are the hosts: ranks 0 and 1 run in murmur-ns0 as "host0",
# ranks 2 and 3 in murmur-ns1 as "host1". Peers of one namespace share its
# loopback and, like every process here, /dev/shm, so murmur counts them
# as one machine (common/host.h, machine_identity); the two namespaces are
# two. A 4-peer murmur-peer job (choco top-1% on a ring 0-1-2-3-0, the MLP,
# one epoch, --no-survive, the data plane on veth0) runs once per PROVIDER
# (default: auto, then tcp). For each run it prints what each rank's log
# says its transport is, the bytes each namespace sent on lo (tcp between
# peers of one namespace goes there) and on veth0 (to the other host), the
# job's wall time and the ranks' test accuracy. Removes what it made.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -ge 1 ] && shift
providers=${*:-auto tcp}
netns="$root/bench/experiments/netns.sh"
[ "$(id -u)" -eq 0 ] || { echo "two_hosts.sh: needs root (network namespaces)" >&2; exit 1; }

trap '"$netns" down 2>/dev/null || true' EXIT
"$netns" down 2>/dev/null || true
"$netns" up 2 none > /dev/null

sent() {  # sent I DEV: bytes namespace I has transmitted on DEV
  ip netns exec "murmur-ns$1" cat "/sys/class/net/$2/statistics/tx_bytes"
}
status=0
for provider in $providers; do
  before="$(sent 0 lo) $(sent 0 veth0) $(sent 1 lo) $(sent 1 veth0)"
  port=$((20000 + ($$ + ${#provider}) % 20000))
  started=$(date +%s.%N)
  pids=
  for rank in 0 1 2 3; do
    ns=$((rank / 2))
    ip netns exec "murmur-ns$ns" env MURMUR_RANK="$rank" MURMUR_WORLD_SIZE=4 \
      MURMUR_RENDEZVOUS="10.77.0.1:$port" MURMUR_HOST="host$ns" MURMUR_INTERFACE=veth0 MURMUR_LOG_LEVEL=info \
      "$build/src/peer/train/murmur-peer" --host-rendezvous --no-survive --provider "$provider" \
      --algorithm choco --compress topk:0.01 --topology ring --model mlp --epochs 1 \
      > "/tmp/two_hosts.$provider.$rank.log" 2>&1 &
    pids="$pids $!"
  done
  job=0
  for pid in $pids; do wait "$pid" || job=$?; done
  [ "$job" -eq 0 ] || status=$job
  wall=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  set -- $before
  echo "provider $provider: job exit $job, wall $wall s (logs /tmp/two_hosts.$provider.{0,1,2,3}.log)"
  for rank in 0 1 2 3; do
    over=$(grep -o 'joined as rank [0-9]* of 4 on [^ ]* over [^:]*:[^ :]*' "/tmp/two_hosts.$provider.$rank.log" |
      sed 's/.* over //' || true)
    accuracy=$(grep '^@murmur .*"bytes_received"' "/tmp/two_hosts.$provider.$rank.log" |
      grep -o '"test_accuracy":[0-9.]*' | cut -d: -f2 || true)
    echo "  rank $rank (host$((rank / 2))): transport ${over:-?}, test accuracy ${accuracy:-?}"
  done
  echo "  host0 sent $(($(sent 0 lo) - $1)) B on lo, $(($(sent 0 veth0) - $2)) B on veth0"
  echo "  host1 sent $(($(sent 1 lo) - $3)) B on lo, $(($(sent 1 veth0) - $4)) B on veth0"
done
exit "$status"
