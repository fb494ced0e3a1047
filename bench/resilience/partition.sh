#!/bin/sh
# Scenario 5 of docs/resilience.md: four emulated hosts (network namespaces,
# bench/experiments/netns.sh) with two peers each, and a partition in epoch
# 2 that heals CUT_SECONDS later. Needs root.
#
#   bench/resilience/partition.sh [BUILD_DIR] [OUT_DIR] [CUT_SECONDS] [CUT]
#
# CUT=host (the default): the last host's link goes down; the rendezvous
# server (murmur-run's, on the bridge) stays with the other six peers.
# CUT=launcher: the first three hosts are moved to a bridge of their own, so
# six peers still reach each other but neither the rendezvous server nor
# the last host's two peers, which keep the server: the server is on the
# smaller side and must stand down while the six fail over to a standby.
#
# Prints what each rank ended with (its metrics summary, or its last log
# line) and the rendezvous' view changes; the whole log is OUT_DIR/run.log.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
out=${2:-/tmp/murmur-partition-$(date +%s)}
cut_seconds=${3:-20}
cut=${4:-host}
case $cut in host | launcher) ;; *) echo "partition.sh: CUT is host or launcher, not '$cut'" >&2; exit 2 ;; esac
netns=$here/../experiments/netns.sh
[ "$(id -u)" -eq 0 ] || { echo "partition.sh: needs root (network namespaces)" >&2; exit 1; }
mkdir -p "$out"

"$netns" down >/dev/null 2>&1 || true
"$netns" up 4 none >/dev/null
trap 'ip link delete murmur-br1 2>/dev/null || true; "$netns" down >/dev/null 2>&1 || true' EXIT INT TERM
for i in 0 1 2 3; do echo "murmur-ns$i slots=2"; done >"$out/hosts.txt"

"$build/src/peer/launcher/murmur-run" -np 8 --hostfile "$out/hosts.txt" --rendezvous-host 10.77.0.254 \
  --ssh "ip netns exec {host} sh -c {command}" --on-failure continue --min-np 4 \
  --summary "$out/summary.json" --timeout 600 -- \
  "$build/src/peer/train/murmur-peer" --model mlp --algorithm choco --topology exponential --compress topk:0.01 \
  --epochs 5 --metrics "$out/metrics-{rank}.jsonl" >"$out/run.log" 2>&1 &
job=$!

# Epoch 2 has begun once rank 0 wrote its first epoch record.
while ! grep -qs '"event":"epoch"' "$out/metrics-0.jsonl"; do
  kill -0 $job 2>/dev/null || break
  sleep 0.5  # polling a file another process writes
done
if [ "$cut" = host ]; then
  echo "partition.sh: cutting murmur-ns3's link at $(date +%T.%N)" | tee -a "$out/events.txt"
  ip link set murmur-v3 down
  sleep "$cut_seconds"  # the fault itself: the link stays down this long
  echo "partition.sh: restoring murmur-ns3's link at $(date +%T.%N)" | tee -a "$out/events.txt"
  ip link set murmur-v3 up
else
  ip link add murmur-br1 type bridge
  ip link set murmur-br1 up
  echo "partition.sh: moving murmur-ns0..2 away from the rendezvous and murmur-ns3 at $(date +%T.%N)" | tee -a "$out/events.txt"
  for i in 0 1 2; do ip link set "murmur-v$i" master murmur-br1; done
  sleep "$cut_seconds"  # the fault itself: the partition lasts this long
  echo "partition.sh: healing the partition at $(date +%T.%N)" | tee -a "$out/events.txt"
  for i in 0 1 2; do ip link set "murmur-v$i" master murmur-br0; done
fi
status=0
wait $job || status=$?
echo "partition.sh: murmur-run exited with $status"
for r in 0 1 2 3 4 5 6 7; do
  summary=$(grep -s '"event":"summary"' "$out/metrics-$r.jsonl" | tail -1 | grep -o '"average_model_test_accuracy":[0-9.]*' || true)
  echo "rank $r: ${summary:-no summary; last log line: $(grep "^\[$r\]" "$out/run.log" | tail -1 | cut -c1-240)}"
done
grep -E 'murmur-run: view|rendezvous server: (lost|adopting|standing down)|smaller side|not in the job|took over' "$out/run.log" | cut -c1-240 | head -40
