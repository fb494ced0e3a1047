#!/bin/sh
# Emulated cluster on one machine: N network namespaces on a software bridge,
# every link shaped to the same bandwidth with tbf, in both directions.
#
#   netns.sh up N RATE [BURST]   namespaces murmur-ns0..N-1 (needs root);
#                                RATE "none" leaves the links unshaped
#   netns.sh down                removes every namespace, veth and the bridge
#   netns.sh exec I CMD...       runs CMD inside murmur-nsI
#   netns.sh hostfile N          a murmur-run hostfile of the namespaces
#   netns.sh status              addresses and qdiscs
#
# Layout: bridge murmur-br0 in the root namespace at 10.77.0.254/24; for each
# i a veth pair, murmur-v<i> on the bridge and veth0 inside murmur-ns<i> at
# 10.77.0.<i+1>/24, lo up. A tbf qdisc on veth0 shapes what the namespace
# sends, one on murmur-v<i> what it receives, so every peer has a full-duplex
# link of RATE to a switch that is not a bottleneck.
#
# Why tbf: this kernel has no netem (docs/toolchain.md, item 10), so latency is
# not emulated here; tbf and htb work inside namespaces.
#
# RATE and BURST use tc's units (10gbit, 1gbit, 100mbit; 64kb). The default
# burst is 4 ms of traffic at RATE (at least 64 KiB): tbf refills its bucket
# once per timer tick, and a bucket smaller than one tick's worth caps the
# rate below RATE. The queue holds 20 ms of traffic beyond the burst (TCP's
# congestion control adapts to it).
set -eu

PREFIX=murmur-ns
BRIDGE=murmur-br0
BRIDGE_ADDR=10.77.0.254
NS_IF=veth0

usage() {
  sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_root() {
  [ "$(id -u)" -eq 0 ] || { echo "netns.sh: $1 needs root" >&2; exit 1; }
}

# Bits per second of a tc rate such as 100mbit, 1gbit, 10gbit, 500kbit.
rate_bits() {
  echo "$1" | awk '{
    s = tolower($0); n = s + 0; u = s; sub(/^[0-9.]+/, "", u)
    m["bit"]=1; m["kbit"]=1e3; m["mbit"]=1e6; m["gbit"]=1e9; m["tbit"]=1e12
    m["bps"]=8; m["kbps"]=8e3; m["mbps"]=8e6; m["gbps"]=8e9
    if (!(u in m) || n <= 0) { print "bad"; exit }
    printf "%.0f\n", n * m[u] }'
}

# Namespaces are listed by name; an index runs 0..N-1.
namespaces() {
  ip netns list 2>/dev/null | awk -v p="$PREFIX" 'index($1, p) == 1 { print $1 }' | sort -V
}

shape() {  # shape NETNS_OR_EMPTY DEV RATE BURST
  if [ -n "$1" ]; then
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst "$4" latency 20ms
  else
    tc qdisc replace dev "$2" root tbf rate "$3" burst "$4" latency 20ms
  fi
}

cmd_up() {
  [ $# -ge 2 ] || usage
  need_root up
  n=$1; rate=$2
  case "$n" in ''|*[!0-9]*) echo "netns.sh: N '$n' is not a whole number" >&2; exit 2 ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 250 ] || { echo "netns.sh: N $n must be 1..250" >&2; exit 2; }
  if [ "$rate" = none ]; then
    bits=0
  else
    bits=$(rate_bits "$rate")
    [ "$bits" != bad ] || { echo "netns.sh: RATE '$rate' is not a tc rate (e.g. 100mbit, 1gbit, none)" >&2; exit 2; }
  fi
  if [ $# -ge 3 ]; then
    burst=$3
  else
    burst=$(awk -v b="$bits" 'BEGIN { x = b / 8 * 0.004; if (x < 65536) x = 65536; printf "%.0fb\n", x }')
  fi
  if [ -n "$(namespaces)" ] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    echo "netns.sh: namespaces or $BRIDGE exist already; run 'netns.sh down' first" >&2
    exit 1
  fi

  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  i=0
  while [ "$i" -lt "$n" ]; do
    ns="$PREFIX$i"; host_if="murmur-v$i"
    ip netns add "$ns"
    ip link add "$host_if" type veth peer name "$NS_IF" netns "$ns"
    ip link set "$host_if" master "$BRIDGE"
    ip link set "$host_if" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "10.77.0.$((i + 1))/24" dev "$NS_IF"
    ip netns exec "$ns" ip link set "$NS_IF" up
    if [ "$rate" != none ]; then
      shape "$ns" "$NS_IF" "$rate" "$burst"
      shape "" "$host_if" "$rate" "$burst"
    fi
    i=$((i + 1))
  done
  if [ "$rate" = none ]; then shaping="unshaped"; else shaping="tbf $rate burst $burst both ways"; fi
  echo "netns.sh: $n namespaces ${PREFIX}0..$((n - 1)) at 10.77.0.1..$n, bridge $BRIDGE_ADDR, $shaping"
}

cmd_down() {
  need_root down
  for ns in $(namespaces); do
    ip netns delete "$ns"  # takes its veth0 and with it the peer end
  done
  # A veth whose namespace went first leaves nothing; one left over does.
  for dev in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | grep '^murmur-v' || true); do
    ip link delete "$dev" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
}

cmd_exec() {
  [ $# -ge 2 ] || usage
  i=$1; shift
  exec ip netns exec "$PREFIX$i" "$@"
}

cmd_hostfile() {
  [ $# -eq 1 ] || usage
  i=0
  while [ "$i" -lt "$1" ]; do
    echo "$PREFIX$i slots=1"
    i=$((i + 1))
  done
}

cmd_status() {
  ip -br addr show "$BRIDGE" 2>/dev/null || echo "no $BRIDGE"
  for ns in $(namespaces); do
    printf '%s: %s; %s\n' "$ns" \
      "$(ip netns exec "$ns" ip -br addr show "$NS_IF" | awk '{ print $3 }')" \
      "$(ip netns exec "$ns" tc qdisc show dev "$NS_IF" | head -1)"
  done
}

[ $# -ge 1 ] || usage
what=$1; shift
case "$what" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  exec) cmd_exec "$@" ;;
  hostfile) cmd_hostfile "$@" ;;
  status) cmd_status ;;
  *) usage ;;
esac
