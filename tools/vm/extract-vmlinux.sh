#!/usr/bin/env bash
# extract-vmlinux.sh BZIMAGE OUT: writes the ELF vmlinux packed inside a
# bzImage to OUT. Used by prepare-stock.sh when a headers package has no
# vmlinux (kbuild only generates module BTF when one is there; the ELF
# carries the .BTF section, which is all it needs).
# A bzImage is a decompressor followed by the compressed kernel: try each
# offset where a compressed stream's magic appears until one decompresses
# to an ELF file.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BZIMAGE OUT" >&2; exit 2; }
img=$1 out=$2
[ -r "$img" ] || { echo "extract-vmlinux: cannot read $img" >&2; exit 1; }

# format  magic (as grep -P bytes)  decompressor
try() {
	local magic=$1 off
	shift
	for off in $(LC_ALL=C grep -obUaP "$magic" "$img" | cut -d: -f1); do
		# The stream runs to the end of the file or stops with an error
		# after the kernel; what matters is that an ELF came out.
		tail -c +"$((off + 1))" "$img" | "$@" >"$out" 2>/dev/null || true
		if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			echo "extract-vmlinux: ELF found at offset $off ($*)" >&2
			return 0
		fi
	done
	return 1
}
try '\x28\xb5\x2f\xfd' zstd -dcq ||
try '\xfd\x37\x7a\x58\x5a\x00' xz -dcq ||
try '\x1f\x8b\x08' gzip -dcq ||
try '\x5d\x00\x00\x00' xz -dcq --format=lzma || {
	rm -f "$out"
	echo "extract-vmlinux: no zstd/xz/gzip/lzma stream in $img decompresses to an ELF" >&2
	exit 1
}
