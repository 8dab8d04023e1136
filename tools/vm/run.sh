#!/usr/bin/env bash
# Runs gpuext's kernel-side tests in QEMU guests; see --help and README.md.
set -euo pipefail
# shellcheck source=tools/vm/lib.sh
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
usage: tools/vm/run.sh [--track stock|hmm|all] [--build-dir DIR] [--keep] [--only GLOB]

Boots gpuext's kernel modules and VM tests in QEMU guests and prints a
test x track table. Two tracks:
  stock  Debian's own kernel $GXVM_STOCK_KVER-amd64 (downloaded with apt-get
         download, never installed); has DRM_SCHED=m, module BTF.
  hmm    a small kernel built here from $GXVM_SRC_PKG with tools/vm/hmm.config
         (DEVICE_PRIVATE, TEST_HMM=m, BPF + module BTF); ~10 min the first time.
Kernels are cached in \$GPUEXT_VM_CACHE (default /var/cache/gpuext/vm).

For each track it builds the modules of core/kernel, hooks-hmm,
hooks-drmsched and tools/vm/selftest (each folder's Kbuild, gpuext.ko
first), the static test programs of their vmtests/*.c, packs them with
busybox, the policies (DIR/policies, DIR/tests/bpf) and
conformance/scenarios into an initramfs, boots it (KVM if a short probe
boots, else TCG with a warning) and collects one result per test.
Any Oops/WARNING/BUG/KASAN/general protection/Call Trace in the kernel
log fails the run.

  --track T      stock, hmm or all (default all)
  --build-dir D  the CMake build dir holding policies/ (default build);
                 results go to D/vm/<track>/ (results.txt, serial.log,
                 dmesg.txt, tests/<test>.log)
  --keep         keep each track's initramfs tree and image (D/vm/<track>/)
  --only GLOB    run only the tests whose name matches, e.g. 'hooks-hmm/*'
                 (all modules are still built and loaded)
Environment: GXVM_ACCEL=kvm|tcg skips the probe; GXVM_TIMEOUT (guest,
default 600 s), GXVM_TEST_TIMEOUT (per test in the guest, default 180 s);
GXVM_STOCK_KVER (default $GXVM_STOCK_KVER); GPUEXT_VM_CACHE.
Exit status: 0 all passed (or skipped), 1 a failure.
EOF
}

track=all build=build keep=0 only='*'
while [ $# -gt 0 ]; do
	case $1 in
	--track) track=${2:?--track needs stock, hmm or all}; shift 2 ;;
	--track=*) track=${1#*=}; shift ;;
	--build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
	--build-dir=*) build=${1#*=}; shift ;;
	--keep) keep=1; shift ;;
	--only) only=${2:?--only needs a glob such as 'hooks-hmm/*'}; shift 2 ;;
	--only=*) only=${1#*=}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; gx_die "unknown argument '$1'" ;;
	esac
done
case $track in
stock|hmm) tracks=("$track") ;;
all) tracks=(stock hmm) ;;
*) gx_die "--track must be stock, hmm or all, not '$track'" ;;
esac
cd "$GXVM_TOP"
build=$(realpath -m "$build")
vmout=$build/vm
mkdir -p "$vmout"
[ -d "$build/policies" ] ||
	gx_warn "$build/policies does not exist: build gpuext first (cmake --build $build); the guests get no policies"

# Folders holding modules (Kbuild) and/or VM tests (vmtests/*.c), in
# module load order: gpuext.ko first, its adapters after it.
MOD_DIRS=(core/kernel hooks-hmm hooks-drmsched conformance/kernel tools/vm/selftest)
slug() { echo "${1//\//-}"; }

# ---- static test programs (the same binaries serve every track) ---------

# Results found on the host (build failures) are written like the guest's:
# the test programs' into $test_results (every track), the modules' into
# $host_results (the current track's).
test_results=$vmout/test-build-results.txt
host_results=$test_results
: >"$test_results"
host_result() { echo "GXVM-RESULT $*" >>"$host_results"; printf 'vm: %s\n' "$*" >&2; }

build_tests() {
	local dir s src name bin libs
	for dir in "${MOD_DIRS[@]}"; do
		[ -d "$dir/vmtests" ] || continue
		s=$(slug "$dir")
		mkdir -p "$vmout/tests/$s"
		libs=()
		for src in "$dir"/vmtests/lib/*.c; do [ -f "$src" ] && libs+=("$src"); done
		for src in "$dir"/vmtests/*.c; do
			[ -f "$src" ] || continue
			name=$(basename "$src" .c)
			bin=$vmout/tests/$s/$name
			# Rebuilt when anything it may include changed.
			if [ -x "$bin" ] && [ -z "$(find "$dir" include "$GXVM_DIR/eu_search_shim.c" \
				-newer "$bin" -type f -print -quit)" ]; then
				continue
			fi
			rm -f "$bin"
			if ! cc -static -O2 -g -Wall -Wextra -Werror -I include -I . -I "$dir/vmtests" \
				-o "$bin" "$src" "${libs[@]}" "$GXVM_DIR/eu_search_shim.c" \
				-lbpf -lelf -lz -lzstd -lpthread >"$bin.log" 2>&1; then
				cat "$bin.log" >&2
				rm -f "$bin"
				host_result "$s/$name FAIL test program does not build (log above)"
			fi
		done
		# Data files travel next to the binaries.
		find "$dir/vmtests" -maxdepth 1 -type f \( -name '*.txt' -o -name '*.scnk' \) \
			-exec cp -f {} "$vmout/tests/$s/" \;
	done
}

# ---- modules -------------------------------------------------------------

# Kbuild writes objects next to the sources, so each track builds in a
# mirror of the repo made of symlinks (BUILD/vm/<track>/kbuild): the repo stays clean and
# relative includes (../include, ../../include/gpuext) resolve as in the repo.
mirror_tree() {
	local tree=$1 e
	mkdir -p "$tree"
	for e in include conformance policies core hal codegen hooks-hmm hooks-drmsched tools; do
		[ -e "$e" ] || continue
		case $e in
		core|hooks-hmm|hooks-drmsched|tools)
			cp -rsf "$GXVM_TOP/$e" "$tree/" ;;
		*)
			ln -sfn "$GXVM_TOP/$e" "$tree/$e" ;;
		esac
	done
	# Files deleted in the repo leave dangling links behind.
	find "$tree" -xtype l -delete 2>/dev/null || true
}

# Builds every folder's modules against $1 (a kernel build dir); writes
# "name path" lines in load order to $2 (paths relative to $3, where the
# .ko files are copied).
build_modules() {
	local kdir=$1 order=$2 dest=$3 tree=$4 dir s symvers="" ko m log
	mirror_tree "$tree"
	: >"$tree/skipped"
	for dir in "${MOD_DIRS[@]}"; do
		[ -f "$dir/Kbuild" ] || continue
		s=$(slug "$dir")
		log=$tree/$s.build.log
		# A folder's vmtests/requires names the kernel options its modules
		# need; on a track whose kernel lacks one they are not built and
		# its tests are reported as skipped.
		local opt missing=""
		for opt in $(grep -o '^CONFIG_[A-Z0-9_]*' "$dir/vmtests/requires" 2>/dev/null || true); do
			grep -Eq "^$opt=(y|m)" "$kdir/.config" || missing="$missing $opt"
		done
		if [ -n "$missing" ]; then
			gx_log "$trk: $dir needs$missing, which $(cat "$kver_file") lacks: skipping its modules and tests"
			echo "$s$missing" >>"$tree/skipped"
			continue
		fi
		gx_log "$trk: modules of $dir"
		rm -f "$tree/$dir/modules.order"
		if ! nice make -C "$kdir" M="$tree/$dir" KBUILD_EXTRA_SYMBOLS="$symvers" \
			-j"$GXVM_JOBS" modules >"$log" 2>&1; then
			tail -n 40 "$log" >&2
			host_result "build:$s FAIL modules do not build against $(cat "$kver_file") (log: $log)"
			continue
		fi
		[ -f "$tree/$dir/Module.symvers" ] && symvers="$symvers $tree/$dir/Module.symvers"
		while read -r m; do
			[ -n "$m" ] || continue
			m=${m%.o}; m=${m%.ko}
			case $m in /*) ko=$m.ko ;; *) ko=$tree/$dir/$m.ko ;; esac
			[ -f "$ko" ] || { host_result "build:$s FAIL $ko listed in modules.order is missing"; continue; }
			# libbpf finds struct_ops types and kfuncs only in module BTF.
			if [ "$(readelf -S "$ko" | grep -c ' \.BTF ')" = 0 ] ||
			   ! bpftool btf dump -B "$kdir/vmlinux" file "$ko" >"$ko.btf.txt" 2>&1; then
				host_result "build:$s FAIL $(basename "$ko") has no module BTF (vmlinux missing from $kdir?)"
				continue
			fi
			cp -f "$ko" "$dest/"
			echo "$(basename "$ko" .ko) $(basename "$ko")" >>"$order"
			gx_log "$trk: $(basename "$ko"): $(grep -c '^\[' "$ko.btf.txt") BTF types of its own"
		done <"$tree/$dir/modules.order"
	done
}

# Copies kernel module $2 of the unpacked kernel tree $1 (lib/modules/KVER)
# and all it depends on (modules.dep) into $3, appending to order file $4.
add_base_module() {
	local mroot=$1 want=$2 dest=$3 order=$4 line mods m f base
	line=$(grep -E "(^|/)$want\.ko(\.xz|\.zst|\.gz)?:" "$mroot/modules.dep" || true)
	[ -n "$line" ] || gx_die "kernel module $want not found in $mroot/modules.dep"
	# modules.dep lists the module, then every dependency (dependencies of
	# dependencies later): load from the end of the list.
	mods=$(echo "$line" | cut -d: -f2 | tr ' ' '\n' | grep . | tac || true)
	mods="$mods
$(echo "$line" | cut -d: -f1)"
	for m in $mods; do
		base=$(basename "$m"); base=${base%.xz}; base=${base%.zst}; base=${base%.gz}
		grep -q " $base\$" "$order" 2>/dev/null && continue
		f=$mroot/$m
		case $m in
		*.xz) xz -dc "$f" >"$dest/$base" ;;
		*.zst) zstd -qdc "$f" >"$dest/$base" ;;
		*.gz) gzip -dc "$f" >"$dest/$base" ;;
		*) cp -f "$f" "$dest/$base" ;;
		esac
		echo "${base%.ko} $base" >>"$order"
		echo "${base%.ko}" >>"$dest/keep"
	done
}

# ---- initramfs -----------------------------------------------------------

make_initramfs() {
	local root=$1 img=$2 a
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,gx/policies,gx/testbpf,gx/scenarios}
	cp -f "$(command -v busybox)" "$root/bin/busybox"
	for a in $(busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
	done
	# The kernel opens /dev/console before /init runs; devtmpfs is not
	# mounted yet at that point.
	[ -c "$root/dev/console" ] || mknod "$root/dev/console" c 5 1
	cp -f "$GXVM_DIR/init.sh" "$root/init"; chmod 755 "$root/init"
	echo "$trk" >"$root/gx/track"
	echo "${GXVM_TEST_TIMEOUT:-180}" >"$root/gx/test-timeout"
	cp -f "$build"/policies/*.bpf.o "$root/gx/policies/" 2>/dev/null || true
	cp -f "$build"/tests/bpf/*.bpf.o "$root/gx/testbpf/" 2>/dev/null || true
	[ -d conformance/scenarios ] && cp -rf conformance/scenarios/. "$root/gx/scenarios/"
	mkdir -p "$root/gx/tests"
	: >"$root/gx/tests/list"
	local s t
	for s in "$vmout"/tests/*/; do
		[ -d "$s" ] || continue
		s=$(basename "$s")
		# Only the tests of folders whose modules built (or that have none).
		grep -q "^GXVM-RESULT build:$s FAIL" "$host_results" && continue
		if grep -q "^$s " "$res/kbuild/skipped"; then
			for t in "$vmout/tests/$s"/*; do
				[ -x "$t" ] && [ -f "$t" ] || continue
				# shellcheck disable=SC2053 # $only is a glob on purpose
				[[ $s/$(basename "$t") == $only ]] || continue
				host_result "$s/$(basename "$t") SKIP the $trk kernel lacks $(grep "^$s " "$res/kbuild/skipped" | cut -d' ' -f2-)"
			done
			continue
		fi
		cp -rf "$vmout/tests/$s" "$root/gx/tests/"
		rm -f "$root/gx/tests/$s"/*.log
		for t in "$root/gx/tests/$s"/*; do
			[ -x "$t" ] && [ -f "$t" ] || continue
			# shellcheck disable=SC2053 # $only is a glob on purpose
			[[ $s/$(basename "$t") == $only ]] || continue
			echo "$s/$(basename "$t") $s $(basename "$t")" >>"$root/gx/tests/list"
		done
	done
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 >"$img")
}

# ---- QEMU ----------------------------------------------------------------

# qemu_boot KERNEL INITRD LOG ACCEL TIMEOUT [extra cmdline]
qemu_boot() {
	local kernel=$1 initrd=$2 log=$3 accel=$4 tmo=$5 extra=${6:-} a
	if [ "$accel" = kvm ]; then a=(-enable-kvm -cpu host); else a=(-accel tcg -cpu max); fi
	timeout -k 5 "$tmo" qemu-system-x86_64 "${a[@]}" -m 2G -smp 2 \
		-display none -monitor none -no-reboot -serial "file:$log" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 printk.time=1 $extra" </dev/null >"$log.qemu" 2>&1
}

# Picks kvm or tcg once per run by booting the first track's guest with
# gxvm.probe=1 (its /init reboots at once). KVM guests hang on some hosts
# (nested virtualisation), so the probe is short and TCG is the fallback;
# whether TCG works shows in the real boot (see run_track). A failed probe
# is remembered until the host reboots (keyed by its boot id), so later runs
# do not wait for it again; GXVM_ACCEL=kvm|tcg overrides both.
accel=${GXVM_ACCEL:-}
probe_accel() {
	local kernel=$1 initrd=$2 log=$vmout/probe.log t0 memo
	t0=$(date +%s)
	[ -n "$accel" ] && return 0
	mkdir -p "$GXVM_CACHE"
	memo=$GXVM_CACHE/kvm-failed.$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
	if [ ! -w /dev/kvm ]; then
		gx_warn "/dev/kvm is missing or not writable: using TCG (software emulation)"
	elif [ -f "$memo" ]; then
		gx_warn "KVM failed its probe earlier since this host booted ($memo): using TCG" \
			"(software emulation, slower, same results); rm $memo to probe again"
	else
		qemu_boot "$kernel" "$initrd" "$log" kvm 30 gxvm.probe=1 || true
		if grep -q GXVM-PROBE-OK "$log"; then
			accel=kvm
			gx_log "KVM works (probe booted in $(( $(date +%s) - t0 ))s)"
			return 0
		fi
		cp -f "$log.qemu" "$memo" 2>/dev/null || touch "$memo"
		gx_warn "KVM guest did not boot within 30 s (hang or KVM error; logs: $log, $log.qemu)" \
			"falling back to TCG (software emulation): slower, same results"
	fi
	accel=tcg
}

# ---- results -------------------------------------------------------------

# Kernel-log lines that fail a run whatever the tests said.
OOPS_RE='Oops|WARNING:|BUG:|KASAN|general protection|Call Trace'

parse_results() {
	local res=$1 list=$2 serial n t
	serial=$res/serial.log
	sed -n '/^GXVM-DMESG-BEGIN/,/^GXVM-DMESG-END/p' "$serial" | sed '1d;$d' | tr -d '\r' >"$res/dmesg.txt"
	{
		cat "$host_results"
		tr -d '\r' <"$serial" | grep '^GXVM-RESULT ' || true
	} >"$res/results.txt"
	# Every test listed must have answered.
	while read -r t _; do
		[ -n "$t" ] || continue
		grep -q "^GXVM-RESULT $t " "$res/results.txt" ||
			echo "GXVM-RESULT $t FAIL no result: the guest stopped before it finished" >>"$res/results.txt"
	done <"$list"
	grep -q '^GXVM-DONE' "$serial" ||
		echo "GXVM-RESULT guest FAIL did not finish (timeout, hang or panic; see serial.log)" >>"$res/results.txt"
	# Kernel messages: timestamped console lines and the dmesg dump.
	{ tr -d '\r' <"$serial" | grep -E '^\[ *[0-9]+\.[0-9]+\]' || true; cat "$res/dmesg.txt"; } |
		{ grep -E "$OOPS_RE" || true; } | sort -u >"$res/oops.txt"
	n=$(wc -l <"$res/oops.txt")
	if [ "$n" -gt 0 ]; then
		echo "vm: $trk: the kernel log has $n oops/warning line(s):" >&2
		head -n 20 "$res/oops.txt" | sed 's/^/vm:   /' >&2
		echo "GXVM-RESULT kernel-log FAIL $n oops/WARNING/BUG line(s), first: $(head -n 1 "$res/oops.txt")" >>"$res/results.txt"
	else
		echo "GXVM-RESULT kernel-log PASS" >>"$res/results.txt"
	fi
	# Each test's own output, for reading after a failure.
	mkdir -p "$res/tests"
	while read -r t _; do
		[ -n "$t" ] || continue
		tr -d '\r' <"$serial" | sed -n "\\#^GXVM-BEGIN $t\$#,\\#^GXVM-END $t #p" >"$res/tests/${t//\//_}.log"
	done <"$list"
	{ grep '^GXVM-RESULT .* FAIL' "$res/results.txt" || true; } | while read -r _ t _ why; do
		echo "vm: $trk: FAIL $t: $why" >&2
		if [ -s "$res/tests/${t//\//_}.log" ]; then
			tail -n 15 "$res/tests/${t//\//_}.log" | sed 's/^/vm:     /' >&2
		fi
	done
	return 0
}

# ---- one track -----------------------------------------------------------

run_track() {
	trk=$1
	local res=$vmout/$trk k kdir kver t0 stage img mroot
	mkdir -p "$res"
	host_results=$res/host-results.txt
	cp -f "$test_results" "$host_results"
	t0=$(date +%s)
	if [ "$trk" = stock ]; then k=$("$GXVM_DIR/prepare-stock.sh"); else k=$("$GXVM_DIR/build-kernel.sh"); fi
	kver_file=$k/kver kver=$(cat "$k/kver") kdir=$k/build
	times[$trk.kernel]=$(( $(date +%s) - t0 ))

	t0=$(date +%s)
	stage=$res/initramfs.d img=$res/initramfs.cpio.gz
	rm -rf "$stage"; mkdir -p "$stage/gx/kmod"
	: >"$stage/gx/kmod/order"; : >"$stage/gx/kmod/keep"
	# The kernel's own modules each track needs, with their dependencies.
	if [ "$trk" = stock ]; then
		mroot=$k/root/lib/modules/$kver
		add_base_module "$mroot" gpu-sched "$stage/gx/kmod" "$stage/gx/kmod/order"
	else
		mroot=$k/modroot/lib/modules/$kver
		add_base_module "$mroot" test_hmm "$stage/gx/kmod" "$stage/gx/kmod/order"
	fi
	build_modules "$kdir" "$stage/gx/kmod/order" "$stage/gx/kmod" "$res/kbuild"
	times[$trk.modules]=$(( $(date +%s) - t0 ))

	t0=$(date +%s)
	make_initramfs "$stage" "$img"
	probe_accel "$k/bzImage" "$img"
	gx_log "$trk: booting $kver ($accel), $(grep -c . "$stage/gx/tests/list") test(s), $(grep -c . "$stage/gx/kmod/order") module(s)"
	rm -f "$res/serial.log"
	qemu_boot "$k/bzImage" "$img" "$res/serial.log" "$accel" "${GXVM_TIMEOUT:-600}" || true
	if [ "$accel" = tcg ] && ! grep -q 'Linux version' "$res/serial.log"; then
		# Not one kernel line: QEMU itself cannot run here (KVM failed too).
		gx_warn "QEMU could not boot a kernel with KVM nor with TCG (see $res/serial.log.qemu):" \
			"SKIPPING the $trk VM tests: this host cannot run them"
		cat "$res/serial.log.qemu" >&2 || true
		echo "GXVM-RESULT guest SKIP neither KVM nor TCG can boot a guest on this host" >"$res/results.txt"
		return 0
	fi
	parse_results "$res" "$stage/gx/tests/list"
	times[$trk.boot]=$(( $(date +%s) - t0 ))
	kvers[$trk]=$kver
	if [ "$keep" = 0 ]; then rm -rf "$stage" "$img"; fi
	gx_log "$trk: kernel ${times[$trk.kernel]}s, modules ${times[$trk.modules]}s, boot+tests ${times[$trk.boot]}s; results in $res"
}

# The scenario differential (conformance/kernel/README.md): the scenarios
# lowered on the simulator travel with kscn; after the tracks ran, the
# decisions each kernel logged are compared with the simulator's.
lowered=$vmout/tests/conformance-kernel/lowered
lower_scenarios() {
	rm -rf "$lowered"
	if [ ! -x "$build/gpuext-scn-lower" ]; then
		host_result "conformance-kernel/lower FAIL $build/gpuext-scn-lower is not built"
		return
	fi
	mkdir -p "$lowered"
	if ! "$build/gpuext-scn-lower" --out "$lowered" --policy-dir "$build/policies" \
		--policy-dir "$build/tests/bpf" conformance/scenarios/*.scn >"$vmout/lower.log" 2>&1; then
		cat "$vmout/lower.log" >&2
		host_result "conformance-kernel/lower FAIL the scenarios do not pass on the simulator"
	fi
}
scenario_diff() {
	local outs=() t log
	[ -d "$lowered" ] || return 0
	for t in "${tracks[@]}"; do
		log=$vmout/$t/tests/conformance-kernel_kscn.log
		[ -s "$log" ] && outs+=("$log")
	done
	[ ${#outs[@]} -gt 0 ] || return 0
	cat "$lowered"/*.lowered >"$vmout/lowered-all.txt"
	if "$build/gpuext-scn-diff" --known conformance/kernel/known-differences.txt \
		"$vmout/lowered-all.txt" "${outs[@]}" >"$vmout/scenario-diff.txt" 2>&1; then
		echo "GXVM-RESULT scenario-differential PASS $(tail -n 1 "$vmout/scenario-diff.txt")" \
			>>"$vmout/${tracks[0]}/results.txt"
	else
		grep -v '^SKIP' "$vmout/scenario-diff.txt" | head -n 60 | sed 's/^/vm: /' >&2
		echo "GXVM-RESULT scenario-differential FAIL $(tail -n 1 "$vmout/scenario-diff.txt")" \
			>>"$vmout/${tracks[0]}/results.txt"
	fi
}

declare -A times kvers
build_tests
lower_scenarios
for t in "${tracks[@]}"; do run_track "$t"; done
scenario_diff

# ---- summary: test x track ------------------------------------------------

declare -A cell
names=()
for t in "${tracks[@]}"; do
	while read -r _ name verdict _; do
		[ -n "${cell[$name.$t]:-}" ] && continue
		cell[$name.$t]=$verdict
		[[ " ${names[*]} " == *" $name "* ]] || names+=("$name")
	done < <(grep '^GXVM-RESULT ' "$vmout/$t/results.txt" || true)
done
echo
# Guest seconds per test ("GXVM-TIME <test> <s>") next to the verdicts.
declare -A secs
for t in "${tracks[@]}"; do
	while read -r _ name sec; do
		secs[$name.$t]=$sec
	done < <(tr -d '\r' <"$vmout/$t/serial.log" 2>/dev/null | grep '^GXVM-TIME ' || true)
done
printf '%-40s' "test"; for t in "${tracks[@]}"; do printf ' %-14s' "$t"; done; echo
failed=0
for name in "${names[@]}"; do
	printf '%-40s' "$name"
	for t in "${tracks[@]}"; do
		v=${cell[$name.$t]:--}
		[ "$v" = FAIL ] && failed=1
		[ -n "${secs[$name.$t]:-}" ] && v="$v ${secs[$name.$t]}s"
		printf ' %-14s' "$v"
	done
	echo
done
for t in "${tracks[@]}"; do
	{ grep '^GXVM-RESULT [^ ]* SKIP' "$vmout/$t/results.txt" 2>/dev/null || true; } |
		while read -r _ name _ why; do echo "vm: $t: SKIP $name: ${why:-no reason given}"; done
done
for t in "${tracks[@]}"; do
	printf 'vm: %-5s kernel %s, accel %s, times: kernel %ss modules %ss boot+tests %ss\n' "$t" \
		"${kvers[$t]:-?}" "${accel:-?}" "${times[$t.kernel]:-?}" "${times[$t.modules]:-?}" "${times[$t.boot]:-?}"
done
if [ "$failed" = 1 ]; then
	echo "vm: FAILED (results and kernel logs under $vmout/<track>/)"
	exit 1
fi
echo "vm: all VM tests passed ($((  $(date +%s) - gx_t0 ))s)"
