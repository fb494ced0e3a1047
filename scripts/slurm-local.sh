#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for running murmur under
# srun and sbatch without a real cluster (tests and docs/launching.md).
#
#   scripts/slurm-local.sh start    # installs Slurm and munge if missing,
#                                   # starts munged, slurmctld and slurmd
#   scripts/slurm-local.sh env      # prints `export SLURM_CONF=...` for srun/sbatch
#   scripts/slurm-local.sh stop     # stops the three daemons
#
# Everything lives in $MURMUR_SLURM_DIR (default /tmp/murmur-slurm): the
# configuration, a munge key of its own, sockets, logs and state, so it
# touches nothing of a Slurm or munge the machine may already run (other
# ports, other sockets). Needs root: slurmd starts tasks as the submitting
# user. The node declares $MURMUR_SLURM_CPUS CPUs (default 16) whatever the
# hardware has, so that `srun -n 8` fits on a 2-core machine: murmur's peers
# block rather than spin, and share cores well.
#
# MpiParams reserves ports 12000-12999: `srun --resv-ports` hands a step its
# own (SLURM_STEP_RESV_PORTS), which murmur's rank 0 uses for the job's
# rendezvous (docs/launching.md, "Slurm").
set -euo pipefail

dir=${MURMUR_SLURM_DIR:-/tmp/murmur-slurm}
cpus=${MURMUR_SLURM_CPUS:-16}
node=$(hostname -s)
ctld_port=${MURMUR_SLURM_CTLD_PORT:-16817}
slurmd_port=${MURMUR_SLURM_SLURMD_PORT:-16818}

die() {
  echo "slurm-local: $*" >&2
  exit 1
}

install_missing() {
  local missing=()
  for tool in munged slurmctld slurmd srun; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && return
  [[ $(id -u) == 0 ]] || die "missing ${missing[*]}: run as root to install slurmctld, slurmd, slurm-client and munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge > /dev/null
}

write_config() {
  mkdir -p "$dir"/{munge,state,spool,log}
  chmod 700 "$dir/munge"
  if [[ ! -s $dir/munge/munge.key ]]; then
    head -c 1024 /dev/urandom > "$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
  fi
  : > "$dir/plugstack.conf"
  cat > "$dir/slurm.conf" << EOF
# Written by scripts/slurm-local.sh: a one-node cluster for murmur's tests.
ClusterName=murmur-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
MpiParams=ports=12000-12999
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2> /dev/null; }

stop_pidfile() {
  local pidfile=$1
  running "$pidfile" || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid"
  for _ in $(seq 50); do
    kill -0 "$pid" 2> /dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2> /dev/null || true
}

wait_node_idle() {
  export SLURM_CONF=$dir/slurm.conf
  for _ in $(seq 150); do
    local state
    state=$(sinfo -h -n "$node" -o %T 2> /dev/null || true)
    case $state in
      idle* | mixed* | allocated*) return 0 ;;
    esac
    sleep 0.2
  done
  die "node $node did not become idle in 30 s (sinfo says '${state:-nothing}'; logs in $dir/log)"
}

start() {
  [[ $(id -u) == 0 ]] || die "start needs root (slurmd runs tasks as the submitting user)"
  install_missing
  write_config
  if ! running "$dir/munged.pid"; then
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
  fi
  if ! running "$dir/slurmctld.pid"; then
    slurmctld -f "$dir/slurm.conf" -i || die "slurmctld did not start: $dir/log/slurmctld.log"
  fi
  if ! running "$dir/slurmd.pid"; then
    slurmd -f "$dir/slurm.conf" -N "$node" || die "slurmd did not start: $dir/log/slurmd.log"
  fi
  wait_node_idle
  echo "slurm-local: node $node up with $cpus CPUs; export SLURM_CONF=$dir/slurm.conf"
}

stop() {
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munged.pid"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$dir/slurm.conf" ;;
  *) die "usage: $0 start|stop|env" ;;
esac
