#!/usr/bin/env bash
# A one-node Slurm cluster from Debian's packages (slurmctld, slurmd, munge) inside a directory,
# for the tests of `proctor slurm` (src/cli/slurm_cluster_slow_test.cc) and for trying it by hand:
#   tools/slurm/local_cluster.sh start DIR [CPUS]   writes DIR/slurm.conf (one node of CPUS task
#       slots, default 4, on this host; ports picked free), its own munge key and socket, starts
#       munged, slurmctld and slurmd as root and waits until the node is idle
#   tools/slurm/local_cluster.sh stop DIR           stops the three
# Commands reach the cluster with SLURM_CONF=DIR/slurm.conf (sbatch, squeue, scontrol, scancel).
# Nothing outside DIR is touched: no system service is started or configured.
set -euo pipefail
command=${1:-}
dir=${2:-}
[[ -n "$command" && -n "$dir" ]] || { echo "usage: $0 start|stop DIR [CPUS]" >&2; exit 2; }
dir=$(realpath -m "$dir")

stop() {
  if [[ -f "$dir/slurm.conf" ]]; then
    SLURM_CONF="$dir/slurm.conf" scontrol shutdown >/dev/null 2>&1 || true
  fi
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -f "$pid_file" ]] || continue
    pid=$(cat "$pid_file")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; kill "$pid" 2>/dev/null || true; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pid_file"
  done
}

case "$command" in
  stop)
    stop
    exit 0
    ;;
  start) ;;
  *) echo "usage: $0 start|stop DIR [CPUS]" >&2; exit 2 ;;
esac

cpus=${3:-4}
if [[ $(id -u) -ne 0 ]]; then
  echo "local_cluster: needs root (slurmd starts jobs as their users)" >&2
  exit 1
fi
for program in munged slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$program" >/dev/null || {
    echo "local_cluster: $program is missing (scripts/install-deps.sh installs slurmctld, slurmd," \
      "slurm-client and munge)" >&2
    exit 1
  }
done
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed"
# Two free TCP ports for slurmctld and slurmd.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
host=$(hostname -s)
cat >"$dir/slurm.conf" <<CONF
# A one-node test cluster written by tools/slurm/local_cluster.sh.
ClusterName=proctor-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$dir/slurm.conf"
slurmd -f "$dir/slurm.conf"
for _ in $(seq 100); do
  state=$(SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2>/dev/null || true)
  if [[ "$state" == idle ]]; then
    echo "local_cluster: node $host idle ($cpus CPUs); SLURM_CONF=$dir/slurm.conf"
    exit 0
  fi
  sleep 0.2
done
echo "local_cluster: the node did not come up (state '${state:-none}'); logs in $dir" >&2
tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
