#!/bin/sh
# Builds the initramfs of the cgroup v2 test machine (test/support/vm.ts): busybox and the
# kernel modules that mount the host's root over 9p (virtio), then switch to it and run
# guest-init.sh from this folder. Usage: make-initramfs.sh KERNEL_RELEASE OUT.cpio.gz
set -eu
release=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/proc" "$work/sys" "$work/dev" "$work/newroot" "$work/modules"
cp /bin/busybox "$work/bin/busybox"
for m in virtio_pci 9pnet_virtio 9p; do
  modprobe --show-depends -S "$release" "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' > "$work/order"
: > "$work/modules/order"
while read -r ko; do
  name=$(basename "$ko")
  case "$ko" in
    *.xz) xz -dc "$ko" > "$work/modules/${name%.xz}"; name=${name%.xz} ;;
    *.zst) zstd -qdc "$ko" > "$work/modules/${name%.zst}"; name=${name%.zst} ;;
    *) cp "$ko" "$work/modules/$name" ;;
  esac
  echo "$name" >> "$work/modules/order"
done < "$work/order"
cat > "$work/init" <<INIT
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
for m in \$(/bin/busybox cat /modules/order); do /bin/busybox insmod /modules/\$m; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288,cache=loose hostroot /newroot ||
  { echo "pf-vm: cannot mount the host's root"; /bin/busybox poweroff -f; }
/bin/busybox umount /proc /sys
/bin/busybox mount --move /dev /newroot/dev
exec /bin/busybox switch_root /newroot /bin/sh $here/guest-init.sh
INIT
chmod +x "$work/init"
(cd "$work" && find . -path ./order -prune -o -print | cpio -o -H newc --quiet) | gzip -1 > "$out"
