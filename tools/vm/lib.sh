# shellcheck shell=bash disable=SC2034
# Shared settings and helpers of the VM harness (sourced, never run).
# Everything that is downloaded or built outside the repo lives under
# $GXVM_CACHE; everything a run produces lives under the build dir.

# The stock track's Debian kernel: one variable, every path keyed on it.
GXVM_STOCK_KVER=${GXVM_STOCK_KVER:-6.12.115+deb12}
GXVM_STOCK_FLAVOUR=amd64
# The HMM track builds from this source package (its exact version keys the cache).
GXVM_SRC_PKG=linux-source-6.12
GXVM_SRC_TARBALL=/usr/src/linux-source-6.12.tar.xz

GXVM_CACHE=${GPUEXT_VM_CACHE:-/var/cache/gpuext/vm}
GXVM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GXVM_TOP=$(cd "$GXVM_DIR/../.." && pwd)
GXVM_JOBS=${GXVM_JOBS:-$(nproc)}

gx_t0=${gx_t0:-$(date +%s)}
gx_log()  { printf 'vm: [%4ss] %s\n' "$(( $(date +%s) - gx_t0 ))" "$*" >&2; }
gx_die()  { printf 'vm: ERROR: %s\n' "$*" >&2; exit 1; }
gx_warn() {
	printf 'vm: ##########################################################\n' >&2
	printf 'vm: WARNING: %s\n' "$@" >&2
	printf 'vm: ##########################################################\n' >&2
}

# Runs a long command with its output in $1 (a log file), printing a
# progress line every 30 s and the log's tail when it fails.
gx_run_logged() {
	local log=$1 what=$2; shift 2
	local start last pid rc
	start=$(date +%s) last=$start
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		if (( $(date +%s) - last >= 30 )) && kill -0 "$pid" 2>/dev/null; then
			last=$(date +%s)
			gx_log "$what: $(( last - start ))s, $(tail -n 1 "$log" | cut -c1-100)"
		fi
	done
	wait "$pid" && rc=0 || rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 40 "$log" >&2
		gx_die "$what failed (exit $rc); full log: $log"
	fi
	gx_log "$what: done in $(( $(date +%s) - start ))s"
}

# Version of an installed Debian package, or empty.
gx_pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
