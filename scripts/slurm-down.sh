#!/usr/bin/env bash
# slurm-down.sh: stops the private Slurm cluster that scripts/slurm-up.sh started.
#
# Idempotent. Cancels the cluster's jobs first, then stops slurmd(s), slurmctld and munged
# through the pid files under $PILOTFISH_SLURM_LAB (never by process name), and only when the
# pid still belongs to a process of this lab (its command line names the lab directory).
#
#   PILOTFISH_SLURM_LAB=/tmp/pilotfish-slurm   the lab to stop
#   KEEP_MUNGE=1                               leave munged running
#   PURGE=1                                    also delete config, state, logs and the munge key
set -euo pipefail

LAB=${PILOTFISH_SLURM_LAB:-/tmp/pilotfish-slurm}
case $LAB in /*) ;; *)
  echo "slurm-down: PILOTFISH_SLURM_LAB must be an absolute path, got '$LAB'" >&2
  exit 1
  ;;
esac
if [ ! -d "$LAB" ]; then
  echo "slurm-down: nothing to stop ($LAB does not exist)" >&2
  exit 0
fi
export SLURM_CONF="$LAB/etc/slurm.conf"

if [ "${PILOTFISH_SLURM_LOCK_HELD:-0}" != 1 ]; then # slurm-up holds it when it calls us
  exec 9>"$LAB/.lock"
  flock -w 120 9 || {
    echo "slurm-down: another slurm-up/slurm-down holds $LAB/.lock" >&2
    exit 1
  }
fi
rm -f "$LAB/env.sh" # from now on the tests see no cluster

# running PID: the process exists and is not a zombie (daemons are reparented to a PID 1 that
# may take a while to reap them).
running() {
  local st
  st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}
# pid_of PIDFILE: prints the pid when it runs and is one of ours; fails otherwise.
pid_of() {
  local p
  [ -s "$1" ] || return 1
  p=$(cat "$1")
  [[ $p =~ ^[0-9]+$ ]] && running "$p" || return 1
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$LAB/" || return 1
  echo "$p"
}
# stop LABEL PIDFILE...: SIGTERM to all of them at once, up to 10 s, then SIGKILL; removes
# the pid files.
stop() {
  local label=$1 f p i left
  shift
  local pids=()
  for f in "$@"; do
    if p=$(pid_of "$f"); then
      kill -TERM "$p" 2>/dev/null || true
      pids+=("$p")
    fi
  done
  for ((i = 0; i < 100; i++)); do
    left=()
    for p in "${pids[@]}"; do running "$p" && left+=("$p"); done
    [ "${#left[@]}" -eq 0 ] && break
    sleep 0.1
  done
  for p in "${left[@]}"; do
    kill -KILL "$p" 2>/dev/null || true
    echo "slurm-down: killed $label pid $p after 10 s" >&2
  done
  [ "${#pids[@]}" -eq 0 ] || echo "slurm-down: stopped $label (pid ${pids[*]})" >&2
  rm -f "$@"
}

# 1. cancel every job of this private cluster, so job processes end through slurmstepd
if pid_of "$LAB/run/slurmctld.pid" >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null || true)
  if [ -n "$jobs" ]; then
    # shellcheck disable=SC2086 # one job id per word
    scancel $jobs 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [ -z "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null || true)" ] && break
      sleep 0.1
    done
    echo "slurm-down: cancelled jobs" $jobs >&2
  fi
fi

# 2. slurmd(s), then slurmctld, then munged
shopt -s nullglob
stop slurmd "$LAB"/run/slurmd-*.pid
stop slurmctld "$LAB/run/slurmctld.pid"
[ "${KEEP_MUNGE:-0}" = 1 ] || stop munged "$LAB/munge/munged.pid"

if [ "${PURGE:-0}" = 1 ]; then
  # only what slurm-up creates, so a mistyped lab path cannot wipe anything else
  rm -rf "${LAB:?}"/{etc,state,spool,log,run,tmp} "$LAB/.lock"
  [ "${KEEP_MUNGE:-0}" = 1 ] || rm -rf "${LAB:?}/munge"
  rmdir "$LAB" 2>/dev/null || true
  echo "slurm-down: purged $LAB" >&2
fi
echo "slurm-down: done" >&2
