#!/usr/bin/env bash
# Builds (or finds in the cache) the HMM track's kernel: Debian's
# linux-source-6.12 configured with allnoconfig + tools/vm/hmm.config.
# Prints the cache directory holding the result:
#   DIR/bzImage   the kernel
#   DIR/build/    the O= build tree, pruned, for out-of-tree modules (M=)
#   DIR/modroot/  lib/modules/KVER of the in-tree modules (test_hmm.ko)
#   DIR/kver      the kernel release string
# The cache key hashes the config fragment, the build recipe (the functions
# below that decide what gets built, as bash prints them: comments and the
# reporting around them do not count) and the source package's version.
# Concurrent runs (several checkouts share the cache) wait for one build.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -f "$GXVM_SRC_TARBALL" ] || gx_die "$GXVM_SRC_TARBALL is missing: apt-get install $GXVM_SRC_PKG (tools/deps.sh)"
srcver=$(gx_pkg_version "$GXVM_SRC_PKG")
[ -n "$srcver" ] || gx_die "package $GXVM_SRC_PKG is not installed (tools/deps.sh)"

mk() { nice make -C "$src" O="$b" -j"$GXVM_JOBS" "$@"; }

# ---- the recipe: what the kernel is -----------------------------------
recipe_config() {
	KCONFIG_ALLCONFIG="$GXVM_DIR/hmm.config" mk allnoconfig
	mk olddefconfig
}
recipe_build() {
	mk bzImage modules
}
recipe_install() {
	mk INSTALL_MOD_PATH="$tmp/modroot" INSTALL_MOD_STRIP=1 modules_install
}
# -------------------------------------------------------------------------

key=$( { cat "$GXVM_DIR/hmm.config"; declare -f mk recipe_config recipe_build recipe_install
	echo "$srcver"; } | sha256sum | cut -c1-16)
out=$GXVM_CACHE/hmm-$key
if [ "${1:-}" = --dir ]; then echo "$out"; exit 0; fi	# where it is or would be
mkdir -p "$GXVM_CACHE"
exec 9>"$GXVM_CACHE/.lock-hmm-$key"
if ! flock -n 9; then
	gx_log "hmm kernel: another run is building $out; waiting for it"
	flock 9
fi
if [ -f "$out/.complete" ]; then
	gx_log "hmm kernel: cached $(cat "$out/kver") in $out"
	echo "$out"
	exit 0
fi

# The source tree is shared by every config of one source version.
src=$GXVM_CACHE/src/$GXVM_SRC_PKG-$srcver
if [ ! -f "$src/.complete" ]; then
	gx_log "hmm kernel: unpacking $GXVM_SRC_TARBALL ($srcver) into $src"
	rm -rf "$src"; mkdir -p "$src"
	tar -xJf "$GXVM_SRC_TARBALL" -C "$src" --strip-components=1
	touch "$src/.complete"
fi

tmp=$out.tmp
rm -rf "$tmp"; mkdir -p "$tmp/build"
b=$tmp/build
t0=$(date +%s)
gx_log "hmm kernel: configuring (allnoconfig + hmm.config), key $key, load: $(cut -d' ' -f1-3 /proc/loadavg)"
recipe_config >"$tmp/config.log" 2>&1 || { tail -n 30 "$tmp/config.log" >&2; gx_die "configuring failed"; }

# allnoconfig silently drops an option whose dependencies are off: check
# that every requested value is in the final .config.
bad=0
while IFS= read -r line; do
	case "$line" in ''|'#'*) continue ;; esac
	if ! grep -qxF "$line" "$b/.config"; then
		got=$(grep -E "^(# )?${line%%=*}[= ]" "$b/.config" || echo "absent")
		printf 'vm: ERROR: hmm.config wants %s, .config has: %s\n' "$line" "$got" >&2
		bad=1
	fi
done <"$GXVM_DIR/hmm.config"
[ "$bad" -eq 0 ] || gx_die "tools/vm/hmm.config: options above did not survive olddefconfig (a dependency is missing from the fragment)"

gx_run_logged "$tmp/build.log" "hmm kernel: make bzImage modules" recipe_build
recipe_install >"$tmp/install.log" 2>&1 || gx_die "modules_install failed (see $tmp/install.log)"
kver=$(cat "$b/include/config/kernel.release")
echo "$kver" >"$tmp/kver"
cp "$b/arch/x86/boot/bzImage" "$tmp/bzImage"

# Prune what out-of-tree modules do not need: objects, archives, the
# intermediate vmlinux files. vmlinux itself stays (kbuild generates module
# BTF against it) but without its DWARF; its .BTF section survives strip.
# Nothing left refers to the tree's own path, so it can be renamed.
find "$b" \( -name '*.o' -o -name '*.a' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod.c' \) \
	-not -path "$b/scripts/*" -not -path "$b/tools/*" -delete
rm -rf "$b"/.tmp_vmlinux* "$b/arch/x86/boot/compressed"
strip --strip-debug "$b/vmlinux"
echo "$(( $(date +%s) - t0 ))" >"$tmp/build-seconds"
echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$tmp/build-load"
rm -rf "$out"; mv "$tmp" "$out"
touch "$out/.complete"
gx_log "hmm kernel: built $kver in $(cat "$out/build-seconds")s ($(du -sh "$out" | cut -f1)) -> $out"
echo "$out"
