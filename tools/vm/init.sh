#!/bin/sh
# /init of the harness's initramfs (busybox sh). Mounts the pseudo file
# systems, loads the modules listed in /gx/kmod/order in that order, runs
# every test listed in /gx/tests/list and prints one line per result:
#   GXVM-RESULT <name> PASS|FAIL|SKIP <reason>
# then dumps the kernel log and reboots (QEMU runs with -no-reboot, so a
# reboot ends it; this also works on kernels without ACPI power-off).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmpfs /tmp
# Messages at KERN_WARNING and above reach the serial console as they happen
# (a hang still shows its WARN/oops); the full log comes from dmesg at the end.
echo 5 >/proc/sys/kernel/printk

finish() {
	echo "GXVM-DMESG-BEGIN"
	dmesg
	echo "GXVM-DMESG-END"
	echo "GXVM-DONE"
	sync
	reboot -f
	sleep 10
}

track=$(cat /gx/track)
echo "GXVM-BOOTED track=$track kernel=$(uname -r) cpus=$(nproc)"
if grep -q 'gxvm.probe=1' /proc/cmdline; then
	echo "GXVM-PROBE-OK"
	reboot -f
fi

# Modules: "name path" per line, dependencies first. A failed load fails
# the run (its tests would only report confusing errors).
loaded_ok=1
while read -r name path; do
	[ -n "$name" ] || continue
	if out=$(insmod "/gx/kmod/$path" 2>&1); then
		echo "GXVM-RESULT load:$name PASS"
	else
		echo "GXVM-RESULT load:$name FAIL insmod: $out"
		loaded_ok=0
	fi
done </gx/kmod/order

export GXVM_TRACK="$track"
export GXVM_POLICIES=/gx/policies
export GXVM_TESTBPF=/gx/testbpf
export GXVM_SCENARIOS=/gx/scenarios
GXVM_KERNEL=$(uname -r)
export GXVM_KERNEL
tmo=$(cat /gx/test-timeout)
# One test per line: "name dir binary"; it runs in its own dir (its data
# files are next to it), its output is shown between markers.
while read -r name dir bin; do
	[ -n "$name" ] || continue
	echo "GXVM-BEGIN $name"
	if ! cd "/gx/tests/$dir"; then
		echo "GXVM-RESULT $name FAIL no directory /gx/tests/$dir in the initramfs"
		continue
	fi
	t0=$(cut -d' ' -f1 /proc/uptime)
	GXVM_DATA="/gx/tests/$dir" timeout "$tmo" "./$bin" >/tmp/out 2>&1
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	cd /
	cat /tmp/out
	echo "GXVM-END $name rc=$rc"
	echo "GXVM-TIME $name $(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }')"
	case $rc in
	0)  echo "GXVM-RESULT $name PASS" ;;
	77) why=$(grep -i 'skip' /tmp/out | tail -n 1)
	    echo "GXVM-RESULT $name SKIP ${why:-exit 77 without a reason}" ;;
	143|124) echo "GXVM-RESULT $name FAIL timed out after ${tmo}s" ;;
	*)  echo "GXVM-RESULT $name FAIL exit $rc" ;;
	esac
done </gx/tests/list
[ "$loaded_ok" = 1 ] || echo "GXVM-NOTE some modules failed to load"

# Unloading checks the modules' exit paths (leaks, WARNs on teardown).
tac /gx/kmod/order | while read -r name path; do
	[ -n "$name" ] || continue
	case " $(tr '\n' ' ' </gx/kmod/keep) " in *" $name "*) continue ;; esac
	grep -q "^$(echo "$name" | tr - _) " /proc/modules || continue
	if out=$(rmmod "$name" 2>&1); then
		echo "GXVM-RESULT unload:$name PASS"
	else
		echo "GXVM-RESULT unload:$name FAIL rmmod: $out"
	fi
done
finish
