#!/bin/sh
# Two emulated hosts with two networks each, and the gossip on the one named:
# the setting of a cluster with a management port and a training network.
#
#   bench/experiments/two_networks.sh [BUILD] [INTERFACE]    (needs root)
#
# netns.sh's two namespaces murmur-ns0/1 on 10.77.0.0/24 (veth0, "management")
# get a second link each, veth1 on bridge murmur-br1 at 10.78.0.<i+1>/24
# ("training"). Rank i of a 2-peer murmur-peer job (choco top-1%, MLP, one
# epoch over libfabric tcp) runs in murmur-nsI as host "hostI" (the namespaces
# share one host name; real hosts do not), the rendezvous on 10.77.0.1;
# the data plane goes where INTERFACE says (default 10.78.0.0/24; "" leaves
# murmur's default). Prints the bytes each namespace sent on veth0 and veth1
# during the job, and removes everything it made.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
interface=${2-10.78.0.0/24}
netns="$root/bench/experiments/netns.sh"
[ "$(id -u)" -eq 0 ] || { echo "two_networks.sh: needs root (network namespaces)" >&2; exit 1; }

cleanup() {
  "$netns" down 2>/dev/null || true
  ip link delete murmur-br1 2>/dev/null || true
}
trap cleanup EXIT
cleanup
"$netns" up 2 none > /dev/null
ip link add murmur-br1 type bridge
ip addr add 10.78.0.254/24 dev murmur-br1
ip link set murmur-br1 up
for i in 0 1; do
  ip link add "murmur-w$i" type veth peer name veth1 netns "murmur-ns$i"
  ip link set "murmur-w$i" master murmur-br1
  ip link set "murmur-w$i" up
  ip netns exec "murmur-ns$i" ip addr add "10.78.0.$((i + 1))/24" dev veth1
  ip netns exec "murmur-ns$i" ip link set veth1 up
done

sent() {  # sent I DEV: bytes namespace I has transmitted on DEV
  ip netns exec "murmur-ns$1" cat "/sys/class/net/$2/statistics/tx_bytes"
}
before="$(sent 0 veth0) $(sent 0 veth1) $(sent 1 veth0) $(sent 1 veth1)"
port=$((20000 + $$ % 20000))
for i in 0 1; do
  ip netns exec "murmur-ns$i" env MURMUR_RANK="$i" MURMUR_WORLD_SIZE=2 MURMUR_RENDEZVOUS="10.77.0.1:$port" \
    MURMUR_HOST="host$i" MURMUR_INTERFACE="$interface" MURMUR_LOG_LEVEL=warn \
    "$build/src/peer/train/murmur-peer" --host-rendezvous --provider tcp --algorithm choco --compress topk:0.01 \
    --model mlp --epochs 1 > "/tmp/two_networks.$i.log" 2>&1 &
  pids="${pids:-} $!"
done
status=0
for pid in $pids; do wait "$pid" || status=$?; done
set -- $before
echo "interface '${interface}': job exit $status (logs /tmp/two_networks.{0,1}.log)"
echo "  rank 0 sent $(($(sent 0 veth0) - $1)) B on veth0 (10.77, management), $(($(sent 0 veth1) - $2)) B on veth1 (10.78, training)"
echo "  rank 1 sent $(($(sent 1 veth0) - $3)) B on veth0 (10.77, management), $(($(sent 1 veth1) - $4)) B on veth1 (10.78, training)"
exit "$status"
