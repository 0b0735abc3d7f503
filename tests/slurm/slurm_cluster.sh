#!/usr/bin/env bash
# A throw-away Slurm cluster on loopback, for the Slurm launcher's tests: munged, slurmctld and one
# slurmd per fake node (node1..nodeN, all on 127.0.0.1), each node with fake GPUs, everything under
# one scratch folder. Debian 12's packages (slurmctld slurmd slurm-client munge), run as root.
#
#   slurm_cluster.sh start DIR PORT   fresh cluster; prints SLURM_CONF=DIR/etc/slurm.conf once
#                                     every node is idle; exits non-zero if it cannot start
#   slurm_cluster.sh stop DIR         cancels every job, waits for them, stops every daemon
#   slurm_cluster.sh kill-node DIR NODE    SIGKILLs that node's slurmd (a crashed node)
#   slurm_cluster.sh start-node DIR NODE   starts that node's slurmd again
#   slurm_cluster.sh free-block PORT       prints the first block of ports from PORT on that a
#                                          start would take (no socket holds any of them)
#
# Ports: PORT for slurmctld, PORT+1.. for the slurmds. PORT is a first choice: a block with a port
# in use (any TCP socket, listening or not, per /proc/net/tcp*) is passed over for the next one, and
# a start that still loses a port to another process (a daemon logs "Address already in use") is
# retried on the next block, up to three times. Every daemon is started here, its PID kept in
# DIR/pid.*, and stopped by that PID; nothing is looked up or killed by name.
# Knobs: SLURM_CLUSTER_NODES (4), SLURM_CLUSTER_GPUS (8 per node), SLURM_CLUSTER_CPUS (4 per node).
set -uo pipefail

nodes=${SLURM_CLUSTER_NODES:-4}
gpus=${SLURM_CLUSTER_GPUS:-8}
cpus=${SLURM_CLUSTER_CPUS:-4}
ready_timeout_s=60

say() { echo "slurm_cluster: $*" >&2; }

# Alive and not a zombie: an orphan may wait a while to be reaped, and kill -0 succeeds on it.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n $state && $state != Z* ]]
}

# Stops one daemon by its recorded PID: TERM, up to 10 s, then KILL.
stop_pid_file() {
  local file=$1 pid waited
  [[ -f $file ]] || return 0
  pid=$(<"$file")
  if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for ((waited = 0; waited < 100; waited++)); do
      alive "$pid" || break
      sleep 0.1
    done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$file"
}

start_slurmd() {
  local dir=$1 node=$2
  mkdir -p "$dir/spool/$node"
  slurmd -D -f "$dir/etc/slurm.conf" -N "$node" >"$dir/log/slurmd.$node.out" 2>&1 &
  echo $! >"$dir/pid.slurmd.$node"
}

write_config() {
  local dir=$1 port=$2
  cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=attune-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
MailProg=/bin/true
# No cgroups: processes tracked by their parentage, tasks not confined.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, every job would take a node's whole memory and run alone.
DefMemPerCPU=100
GresTypes=gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
# No slurmdbd: finished jobs are facts of slurmctld's memory (for MinJobAge) and the jobcomp file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MinJobAge=3600
# Four nodes of four CPUs on a two-core machine.
SlurmdParameters=config_overrides
SchedulerParameters=sched_interval=1
ReturnToService=1
# A node failure ends a batch job NODE_FAIL instead of requeueing it.
JobRequeue=0
KillWait=2
SlurmdTimeout=10
MpiDefault=none
NodeName=node[1-$nodes] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((port + 1))-$((port + nodes))] CPUs=$cpus RealMemory=4000 Gres=gpu:$gpus
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  {
    echo "AutoDetect=off"
    echo "NodeName=node[1-$nodes] Name=gpu File=$dir/dev/nvidia[0-$((gpus - 1))]"
  } >"$dir/etc/gres.conf"
}

idle_nodes() {
  timeout 5 sinfo -h -t idle -o %D 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

cmd_stop() {
  local dir=$1 waited
  export SLURM_CONF=$dir/etc/slurm.conf
  if [[ -f $dir/pid.slurmctld ]] && alive "$(<"$dir/pid.slurmctld")"; then
    # Running jobs first: their slurmstepd outlives a stopped slurmd.
    timeout 10 scancel --partition=debug 2>/dev/null
    for ((waited = 0; waited < 100; waited++)); do
      [[ -z $(timeout 5 squeue -h -t PD,R,CG,S,CF -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
    for ((waited = 0; waited < 50; waited++)); do
      pgrep -x slurmstepd >/dev/null || break
      sleep 0.2
    done
  fi
  local file
  for file in "$dir"/pid.slurmd.*; do stop_pid_file "$file"; done
  stop_pid_file "$dir/pid.slurmctld"
  stop_pid_file "$dir/pid.munged"
}

# True when a TCP socket of this machine (IPv4 or IPv6, in any state) holds the local port.
port_in_use() {
  local hex
  hex=$(printf ':%04X ' "$1")
  grep -q -F -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# The first block of nodes + 1 ports from $1 on (in steps of 8) that no socket holds.
free_port_block() {
  local port=$1 tries i busy
  for ((tries = 0; tries < 64; tries++, port += 8)); do
    busy=0
    for ((i = 0; i <= nodes; i++)); do
      port_in_use $((port + i)) && busy=1 && break
    done
    ((busy)) || { echo "$port"; return 0; }
  done
  return 1
}

cmd_start() {
  local dir=$1 port=$2 attempt rc
  for ((attempt = 1; attempt <= 3; attempt++)); do
    port=$(free_port_block "$port") || { say "no free block of ports from $2 on"; return 1; }
    start_once "$dir" "$port"
    rc=$?
    ((rc == 3)) || return "$rc"
    say "a port of $port..$((port + nodes)) was taken by another process; trying the next block"
    port=$((port + 8))
  done
  return 1
}

# 0: ready; 1: failed; 3: a daemon could not bind its port (the caller tries other ports).
start_once() {
  local dir=$1 port=$2 i
  [[ -d $dir ]] && cmd_stop "$dir"
  rm -rf "$dir"
  mkdir -p "$dir"/{etc,state,spool,log,dev,munge,run} || return 1
  chmod 755 "$dir" "$dir/munge"  # munged wants every directory above its socket searchable
  for ((i = 0; i < gpus; i++)); do
    mknod "$dir/dev/nvidia$i" c 1 3 || { say "cannot mknod the fake GPUs (needs root)"; return 1; }
  done
  head -c 1024 /dev/urandom >"$dir/munge/key" && chmod 600 "$dir/munge/key"
  munged -F --key-file="$dir/munge/key" --socket="$dir/munge/socket" \
    --seed-file="$dir/munge/seed" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/log/munged.log" >"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/pid.munged"
  for ((i = 0; i < 50; i++)); do
    [[ -S $dir/munge/socket ]] && break
    sleep 0.1
  done
  [[ -S $dir/munge/socket ]] || { say "munged did not start"; cat "$dir/log/munged.out" >&2; cmd_stop "$dir"; return 1; }

  write_config "$dir" "$port"
  export SLURM_CONF=$dir/etc/slurm.conf
  slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/pid.slurmctld"
  for ((i = 1; i <= nodes; i++)); do start_slurmd "$dir" "node$i"; done

  local deadline=$((SECONDS + ready_timeout_s)) file
  until [[ $(idle_nodes) == "$nodes" ]]; do
    for file in "$dir"/pid.*; do
      alive "$(<"$file")" || deadline=0  # a daemon died: give up at once
    done
    if ((SECONDS >= deadline)); then
      if grep -q -s "Address already in use" "$dir"/log/*.out; then
        cmd_stop "$dir"
        return 3
      fi
      say "the cluster did not become ready"
      tail -n 5 "$dir"/log/*.out "$dir"/log/*.log >&2 2>/dev/null
      cmd_stop "$dir"
      return 1
    fi
    sleep 0.2
  done
  echo "SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
  start) [[ $# -eq 3 ]] && cmd_start "$2" "$3" ;;
  stop) [[ $# -eq 2 ]] && cmd_stop "$2" ;;
  kill-node)
    [[ $# -eq 3 && -f $2/pid.slurmd.$3 ]] && kill -KILL "$(<"$2/pid.slurmd.$3")" && rm -f "$2/pid.slurmd.$3"
    ;;
  start-node) [[ $# -eq 3 ]] && start_slurmd "$2" "$3" ;;
  free-block) [[ $# -eq 2 ]] && free_port_block "$2" ;;
  *)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
