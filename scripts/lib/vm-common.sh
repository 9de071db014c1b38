# scripts/lib/vm-common.sh - the Soft-RoCE guest of scripts/softroce-cluster:
# Debian's kernel from the cache scripts/softroce-vm keeps, and an
# initramfs for it with what one cluster member needs (its virtio NIC, rxe,
# 9p, and netem with an ifb device for faults on both directions of its
# link). Sourced; callers set SRC (the source tree).
#
# The initramfs's init is the one scripts/softroce-vm uses: mount the
# host's root over 9p read-only and /tmp writable, chroot, run
# RES/guest.sh (RES from the kernel's squall_res= argument), write its
# exit status to RES/guest.rc, power off.

vm_say() { echo "softroce-cluster: $*" >&2; }

VM_CACHE=${SQUALL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/squall/softroce-vm}
VM_MODULES="rdma_rxe ib_uverbs rdma_ucm 9p 9pnet_virtio virtio_pci virtio_net crc32_generic
    sch_netem sch_ingress ifb act_mirred cls_matchall"

# vm_kernel: fetches and prepares the kernel through scripts/softroce-vm -p
# (SQUALL_VM_KERNEL picks another, as there), then sets KVER, KROOT (the
# unpacked packages) and VMLINUZ.
vm_kernel() {
    local f
    KVER=$("$SRC/scripts/softroce-vm" -p | tail -n1) || { vm_say "scripts/softroce-vm -p failed"; return 2; }
    if [ -n "${SQUALL_VM_KERNEL:-}" ]; then KROOT=$VM_CACHE/kernels/$KVER/kroot; else KROOT=$VM_CACHE/kroot; fi
    VMLINUZ=
    for f in "$KROOT/boot/vmlinuz-$KVER" "$KROOT/lib/modules/$KVER/vmlinuz" "$KROOT/usr/lib/modules/$KVER/vmlinuz"; do
        [ -s "$f" ] && { VMLINUZ=$f; break; }
    done
    [ -n "$VMLINUZ" ] || { vm_say "no kernel image for $KVER under $KROOT"; return 2; }
}

# vm_initrd: sets INITRD to the cluster initramfs for KVER/KROOT, built
# once (its name carries a hash of the module list and of this file).
vm_initrd() {
    local key
    key=$(cat "$SRC/scripts/lib/vm-common.sh" | md5sum | cut -c1-12)
    INITRD=$VM_CACHE/cluster-initrd-$KVER-$key.cpio.gz
    [ -s "$INITRD" ] && return 0
    vm_say "building the cluster initramfs for $KVER (once)"
    local ir m f base seen=" "
    [ -f "$KROOT/lib/modules/$KVER/modules.dep" ] || depmod -b "$KROOT" "$KVER"
    ir=$(mktemp -d)
    mkdir -p "$ir/bin" "$ir/mods" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/host"
    cp "$(command -v busybox)" "$ir/bin/busybox"
    for m in sh mount umount insmod mkdir sleep cat echo sed reboot poweroff sync chroot; do
        ln -s busybox "$ir/bin/$m"
    done
    : >"$ir/mods.list"
    for m in $VM_MODULES; do
        while read -r _ f _; do
            [ -n "$f" ] || continue
            case "$seen" in *" $f "*) continue ;; esac
            seen="$seen$f "
            base=$(basename "$f")
            case "$base" in
            *.ko.xz) xz -dc "$f" >"$ir/mods/${base%.xz}"; base=${base%.xz} ;;
            *.ko.zst) zstd -qdc "$f" >"$ir/mods/${base%.zst}"; base=${base%.zst} ;;
            *) cp "$f" "$ir/mods/$base" ;;
            esac
            echo "$base" >>"$ir/mods.list"
        done < <(modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" 2>/dev/null | grep '^insmod')
    done
    for m in rdma_rxe virtio_net sch_netem; do
        grep -q "^$m.ko" "$ir/mods.list" || { rm -rf "$ir"; vm_say "kernel $KVER has no module $m"; return 2; }
    done
    cat >"$ir/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods.list); do insmod /mods/$m 2>/dev/null; done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host; then
    echo "cluster guest: cannot mount host root over 9p" >/dev/console
    reboot -f
fi
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mount -t tmpfs run /host/run
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 hosttmp /host/tmp
res=$(sed -n 's/.*squall_res=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$res" ] && [ -d "/host$res" ]; then
    chroot /host /bin/bash "$res/guest.sh" >"/host$res/guest.log" 2>&1
    echo $? >"/host$res/guest.rc"
else
    echo "cluster guest: no results folder ($res)" >/dev/console
fi
sync
reboot -f
INIT
    chmod +x "$ir/init"
    (cd "$ir" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$INITRD.new"
    mv "$INITRD.new" "$INITRD"
    rm -rf "$ir"
}
