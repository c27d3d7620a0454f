#!/bin/sh
# PID 1 of the cgroup v2 test machine (test/support/vm.ts), on the host's root over 9p: mounts
# what a machine has, the cgroup v2 tree alone (every controller on it, as on a machine without
# v1), a tmpfs /run with TMPDIR=/run/tmp in it (Unix sockets do not work over 9p; the host's
# /tmp, where a checkout may be, stays seen), then runs the command of the kernel argument
# pf_cmd (a file that holds it) and powers off. Its exit status goes to the console as
# "pf-vm-exit N".
exec > /dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || {
  mount -t tmpfs cgroup /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/unified &&
    mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
}
mkdir -p /dev/shm /dev/pts && mount -t tmpfs -o mode=1777 shm /dev/shm && mount -t devpts devpts /dev/pts
mount -t tmpfs run /run
mkdir -m 1777 /run/tmp
ip link set lo up 2>/dev/null || busybox ip link set lo up
cmd=$(sed -n 's/.*pf_cmd=\([^ ]*\).*/\1/p' /proc/cmdline)
export HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TMPDIR=/run/tmp
sh "$cmd"
echo "pf-vm-exit $?"
poweroff -f
