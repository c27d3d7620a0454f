#!/usr/bin/env bash
# slurm-up.sh: starts pilotfish's private Slurm cluster on this host, without systemd.
# Run by `npm test` ("pretest") after system-deps.sh; the Slurm tests use it through
# test/support/slurm.ts and report themselves skipped when it is not up.
#
# Idempotent: installs the Debian packages when missing (as root), (re)writes the config,
# starts munged, slurmctld and one slurmd per fake node only when not already running, and
# waits until every node answers. A second run with the same settings is a fast no-op; a run
# with other settings (e.g. another node count) stops our daemons, drops the saved Slurm state
# and starts again. Without root it only prints what is missing and exits 0.
#
# Everything lives under $PILOTFISH_SLURM_LAB, with its own munge socket and its own ports, so
# it never meets a system Slurm (/etc/slurm, ports 6817/6818) or another lab on this machine.
#
#   PILOTFISH_SLURM_LAB=/tmp/pilotfish-slurm   config, state, logs, pid files, env.sh
#   PILOTFISH_SLURM_NODES=8                    fake nodes n1..nN on this host, one slurmd each,
#                                              each in its own UTS namespace (`hostname` = nX)
#   PILOTFISH_SLURM_CPUS_PER_NODE=2            CPUs declared per node (may exceed the real ones)
#   PILOTFISH_SLURM_PORT=17817                 slurmctld port; slurmd of nX listens on PORT+X
#
# Afterwards: `source $PILOTFISH_SLURM_LAB/env.sh` (exports SLURM_CONF).
# Stop with scripts/slurm-down.sh (PURGE=1 also deletes state and logs).
set -euo pipefail

LAB=${PILOTFISH_SLURM_LAB:-/tmp/pilotfish-slurm}
NODES=${PILOTFISH_SLURM_NODES:-8}
CPN=${PILOTFISH_SLURM_CPUS_PER_NODE:-2}
PORT=${PILOTFISH_SLURM_PORT:-17817}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PATH=$PATH:/usr/sbin:/sbin # the daemons live there, off the PATH of most non-root users
T0=$(date +%s%N)

log() {
  local ms=$((($(date +%s%N) - T0) / 1000000))
  printf '[slurm-up %d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*" >&2
}
die() {
  echo "slurm-up: $*" >&2
  exit 1
}
# alive PIDFILE: the pid in PIDFILE runs and is one of ours (its command line names $LAB),
# so a stale pid file whose pid was reused by another process does not count.
alive() {
  local p
  [ -s "$1" ] || return 1
  p=$(cat "$1")
  [[ $p =~ ^[0-9]+$ ]] || return 1
  kill -0 "$p" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$LAB/"
}
# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  echo "slurm-up: timed out after ${secs}s waiting for $what" >&2
  return 1
}

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT (bash's /dev/tcp connect).
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# ------------------------------------------------------------------ settings
for v in NODES:PILOTFISH_SLURM_NODES CPN:PILOTFISH_SLURM_CPUS_PER_NODE PORT:PILOTFISH_SLURM_PORT; do
  name=${v%%:*}
  val=${!name}
  [[ $val =~ ^[1-9][0-9]{0,5}$ ]] || die "${v#*:} must be a positive integer below 1000000, got '$val'"
done
[ "$NODES" -le 64 ] || die "PILOTFISH_SLURM_NODES must be at most 64, got $NODES"
[ $((PORT + NODES)) -le 65535 ] || die "PILOTFISH_SLURM_PORT $PORT + $NODES nodes exceeds 65535"
if [ "$PORT" -le 6818 ] && [ $((PORT + NODES)) -ge 6817 ]; then
  die "ports $PORT-$((PORT + NODES)) overlap Slurm's default ports 6817/6818; pick another PILOTFISH_SLURM_PORT"
fi
case $LAB in /*) ;; *) die "PILOTFISH_SLURM_LAB must be an absolute path, got '$LAB'" ;; esac

# ------------------------------------------------------------------ packages
missing=()
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
command -v munged >/dev/null 2>&1 || missing+=(munge)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
# Slurm's mpi/pmix plugin loads <pmix>/lib/libpmix.so, which only the -dev package has (libpmix2
# alone: "pmi/pmix: can not load PMIx library"); OpenMPI started by srun needs it (--mpi=pmix).
pmix_stamp() { dpkg-query -W -f='${Status} ${Version}' libpmix-dev 2>/dev/null || echo none; }
if command -v dpkg-query >/dev/null 2>&1 && [[ $(pmix_stamp) != *' installed '* ]]; then
  missing+=(libpmix-dev)
fi

if [ "$(id -u)" -ne 0 ]; then
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "slurm-up: missing Debian packages: ${missing[*]}" >&2
    echo "slurm-up: install them as root (apt-get install ${missing[*]}) and run" \
      "'sudo bash scripts/slurm-up.sh'; the Slurm tests are skipped until then." >&2
  else
    echo "slurm-up: starting the private Slurm cluster needs root (slurmd runs jobs);" \
      "run 'sudo bash scripts/slurm-up.sh'. The Slurm tests are skipped until then." >&2
  fi
  exit 0
fi

if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || {
    echo "slurm-up: no apt-get here; install by hand: ${missing[*]}; Slurm tests are skipped" >&2
    exit 0
  }
  log "installing ${missing[*]}"
  # Package scripts must not start a system munge or Slurm: block service starts while
  # installing unless a policy already does (Debian's policy-rc.d convention).
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_opts=(-o DPkg::Lock::Timeout=600)
  apt-get "${apt_opts[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
  if [ "$made_policy" = 1 ]; then
    rm -f /usr/sbin/policy-rc.d
    trap - EXIT
  fi
  for c in slurmctld slurmd sbatch munged unshare; do
    command -v "$c" >/dev/null 2>&1 || die "packages installed but $c is still not on PATH"
  done
  log "installed"
fi

# ------------------------------------------------------------------ layout and lock
mkdir -p "$LAB"/{etc,state,spool,log,run,tmp}
install -d -m 0755 "$LAB/munge" # munged wants the socket directory traversable by others
# one slurm-up/slurm-down at a time per lab; daemons are started with fd 9 closed
exec 9>"$LAB/.lock"
flock -w 120 9 || die "another slurm-up/slurm-down holds $LAB/.lock"
export SLURM_CONF="$LAB/etc/slurm.conf"
HOST=$(hostname -s)
MEM_MB=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
NODE_MEM=$((MEM_MB / (2 * NODES))) # half the host's memory, split between the fake nodes
NODELIST="n[1-$NODES]"
NAMES=()
for ((i = 1; i <= NODES; i++)); do NAMES+=("n$i"); done

# ------------------------------------------------------------------ munge
SOCK="$LAB/munge/munge.socket"
if [ ! -s "$LAB/munge/munge.key" ]; then
  mungekey -c -k "$LAB/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$LAB/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$LAB/munge/munge.key"
fi
if ! alive "$LAB/munge/munged.pid"; then
  rm -f "$SOCK" "$SOCK.lock" "$LAB/munge/munged.pid"
  munged --socket="$SOCK" --key-file="$LAB/munge/munge.key" \
    --log-file="$LAB/munge/munged.log" --pid-file="$LAB/munge/munged.pid" \
    --seed-file="$LAB/munge/munged.seed" --force </dev/null >>"$LAB/log/daemons.out" 2>&1 9>&-
  wait_for 10 munged alive "$LAB/munge/munged.pid" || {
    tail -20 "$LAB/munge/munged.log" >&2
    exit 1
  }
  log "munged started (pid $(cat "$LAB/munge/munged.pid"))"
fi
munge -S "$SOCK" -n </dev/null | unmunge -S "$SOCK" >/dev/null || die "munge credential check failed"

# ------------------------------------------------------------------ config
NEWCONF=$(
  cat <<EOF
# Generated by pilotfish scripts/slurm-up.sh: do not edit (it is rewritten on every run).
ClusterName=pilotfish
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
# memory is a consumable too (CR_Core would ignore --mem)
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
# schedule a batch job as soon as it is submitted (the default waits up to 3 s)
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
# reject at submission a job the partition can never run (e.g. more nodes than it has)
EnforcePartLimits=ALL
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd-%n.pid
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/%n
# per-node TmpFS: PMIx puts its spmix_appdir_* here; one /tmp would collide between fake nodes
TmpFS=$LAB/tmp/%n
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# nodes are what this file declares, not the host's hardware: fake nodes may claim more CPUs
SlurmdParameters=config_overrides
# no accounting database (no sacct): keep finished jobs visible to scontrol for 5 minutes
MinJobAge=300
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
NodeName=$NODELIST NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[$((PORT + 1))-$((PORT + NODES))] CPUs=$CPN RealMemory=$NODE_MEM State=UNKNOWN
PartitionName=debug Nodes=$NODELIST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
)
if [ ! -f "$SLURM_CONF" ] || [ "$(cat "$SLURM_CONF")" != "$NEWCONF" ]; then
  if alive "$LAB/run/slurmctld.pid" || compgen -G "$LAB/run/slurmd-*.pid" >/dev/null; then
    log "config changed: stopping the running daemons"
    rm -f "$LAB/env.sh"
    PILOTFISH_SLURM_LAB="$LAB" PILOTFISH_SLURM_LOCK_HELD=1 KEEP_MUNGE=1 \
      bash "$HERE/slurm-down.sh" >&2
  fi
  # saved jobs and node states belong to the old config: start from nothing
  rm -rf "${LAB:?}"/state/* "${LAB:?}"/spool/* "${LAB:?}"/tmp/*
  printf '%s\n' "$NEWCONF" >"$SLURM_CONF.new"
  mv "$SLURM_CONF.new" "$SLURM_CONF"
  log "wrote $SLURM_CONF ($NODES nodes x $CPN CPUs, ports $PORT-$((PORT + NODES)))"
fi

# ------------------------------------------------------------------ daemons
ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
if ! alive "$LAB/run/slurmctld.pid"; then
  rm -f "$LAB/env.sh"
  port_free "$PORT" || die "port $PORT is taken (another lab?); pick another PILOTFISH_SLURM_PORT"
  # -i: ignore saved state that no longer matches instead of refusing to start
  slurmctld -f "$SLURM_CONF" -i </dev/null >>"$LAB/log/daemons.out" 2>&1 9>&- || {
    tail -20 "$LAB/log/slurmctld.log" >&2
    die "slurmctld did not start"
  }
  if ! wait_for 20 slurmctld ctld_up; then
    tail -20 "$LAB/log/slurmctld.log" >&2
    exit 1
  fi
  log "slurmctld started (pid $(cat "$LAB/run/slurmctld.pid"), port $PORT)"
fi

# slurmd loads the mpi plugins once, as it starts: one started before libpmix-dev was installed
# (here or by system-deps.sh) fails every --mpi=pmix step ("Socket timed out"). The stamp says
# which PMIx the running slurmds loaded; when it differs, restart them (their running steps
# live on under slurmstepd).
STAMP="$LAB/run/slurmd.pmix"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$(pmix_stamp)" ]; then
  stale=()
  for n in "${NAMES[@]}"; do
    if alive "$LAB/run/slurmd-$n.pid"; then stale+=("$(cat "$LAB/run/slurmd-$n.pid")"); fi
  done
  if [ "${#stale[@]}" -gt 0 ]; then
    log "PMIx changed since slurmd started: restarting slurmd (pid ${stale[*]})"
    rm -f "$LAB/env.sh"
    kill -TERM "${stale[@]}" 2>/dev/null || true
    # gone: exited, or a zombie that a PID 1 other than init has not reaped yet
    gone() {
      local p st
      for p in "${stale[@]}"; do
        st=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$st" = Z ] || return 1
      done
    }
    # a slurmd whose step launch hangs (a stepd that failed to load PMIx) never ends on TERM
    if ! wait_for 10 "slurmd to stop" gone; then
      kill -KILL "${stale[@]}" 2>/dev/null || true
      wait_for 5 "slurmd to die" gone || die "slurmd (pid ${stale[*]}) did not die"
    fi
  fi
fi
pmix_stamp >"$STAMP"
for n in "${NAMES[@]}"; do
  if alive "$LAB/run/slurmd-$n.pid"; then continue; fi
  rm -f "$LAB/env.sh" "$LAB/run/slurmd-$n.pid"
  port=$((PORT + ${n#n}))
  port_free "$port" || die "port $port of slurmd $n is taken (another lab?); pick another PILOTFISH_SLURM_PORT"
  mkdir -p "$LAB/spool/$n" "$LAB/tmp/$n"
  # own UTS namespace per fake node: `hostname` inside a job on nX prints nX
  unshare --uts sh -c 'hostname "$1" && exec slurmd -f "$2" -N "$1"' slurmd "$n" "$SLURM_CONF" \
    </dev/null >>"$LAB/log/daemons.out" 2>&1 9>&- || {
    tail -20 "$LAB/log/slurmd-$n.log" >&2
    die "slurmd $n did not start"
  }
  if ! wait_for 10 "slurmd $n" alive "$LAB/run/slurmd-$n.pid"; then
    tail -20 "$LAB/log/slurmd-$n.log" >&2
    exit 1
  fi
  log "slurmd $n started (pid $(cat "$LAB/run/slurmd-$n.pid"))"
done

# ------------------------------------------------------------------ wait until usable
# Every node must answer: idle on a fresh start; mixed/allocated/completing when jobs of an
# earlier run still hold it (a warm re-run must not wait for them). A trailing * ~ # ! % $ @
# flags a node that is not responding or changing state.
nodes_ready() {
  local states
  states=$(sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
  [ "$(wc -l <<<"$states")" -eq "$NODES" ] || return 1
  if grep -qE ' inval' <<<"$states"; then # registered, but does not match its NodeName line
    sinfo -N -o '%N %T %E' >&2 || true
    die "slurmd registered nodes that contradict $SLURM_CONF (see the reasons above)"
  fi
  if grep -qE ' (down|drained|draining|fail|failing)' <<<"$states"; then
    scontrol update nodename="$NODELIST" state=resume >/dev/null 2>&1 || true
    return 1
  fi
  ! grep -vqE ' (idle|mixed|allocated|completing)$' <<<"$states"
}
if ! wait_for 30 "nodes $NODELIST to be idle" nodes_ready; then
  sinfo -N -o '%N %T %E' >&2 || true
  exit 1
fi

printf '# written by pilotfish scripts/slurm-up.sh once the cluster answered\nexport SLURM_CONF=%s\n' \
  "$SLURM_CONF" >"$LAB/env.sh.new"
mv "$LAB/env.sh.new" "$LAB/env.sh"
log "ready: $NODELIST ($NODES x $CPN CPUs) on ports $PORT-$((PORT + NODES)); source $LAB/env.sh"
