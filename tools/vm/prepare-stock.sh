#!/usr/bin/env bash
# Fetches (or finds in the cache) the stock track's kernel: Debian's own
# linux-image-$GXVM_STOCK_KVER-amd64-unsigned with its headers and kbuild,
# downloaded with `apt-get download` and unpacked with `dpkg-deb -x` into
# the cache (never installed into the host). Prints the directory:
#   DIR/bzImage  DIR/build/ (the headers, usable as make -C DIR/build M=...)
#   DIR/root/    the unpacked packages (lib/modules/KVER with modules.dep)
#   DIR/kver     the kernel release string
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kver=$GXVM_STOCK_KVER-$GXVM_STOCK_FLAVOUR
out=$GXVM_CACHE/stock-$GXVM_STOCK_KVER
mkdir -p "$GXVM_CACHE"
# Several checkouts may share the cache: one fetches, the others wait.
exec 9>"$GXVM_CACHE/.lock-stock-$GXVM_STOCK_KVER"
flock 9
if [ -f "$out/.complete" ]; then
	gx_log "stock kernel: cached $kver in $out"
	echo "$out"
	exit 0
fi
pkgs=("linux-image-$kver-unsigned" "linux-headers-$kver"
      "linux-headers-$GXVM_STOCK_KVER-common" "linux-kbuild-$GXVM_STOCK_KVER")
tmp=$out.tmp
rm -rf "$tmp"; mkdir -p "$tmp/debs" "$tmp/root"
gx_log "stock kernel: apt-get download ${pkgs[*]}"
# apt's sandbox user must be able to write the download directory.
chmod 777 "$tmp/debs"
(cd "$tmp/debs" && apt-get download "${pkgs[@]}" >"$tmp/download.log" 2>&1) || {
	cat "$tmp/download.log" >&2
	gx_die "apt-get download failed: is $GXVM_STOCK_KVER still in the archive (apt-get update; apt-cache policy ${pkgs[0]})? Set GXVM_STOCK_KVER to one that is."
}
for deb in "$tmp"/debs/*.deb; do
	dpkg-deb -x "$deb" "$tmp/root"
	echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$tmp/versions"
done
rm -rf "$tmp/debs"

hdr=$tmp/root/usr/src/linux-headers-$kver
[ -f "$hdr/Makefile" ] || gx_die "linux-headers-$kver has no Makefile at $hdr"
# The headers' Makefile includes the -common one by its absolute /usr/src
# path: point it at our copy. The scripts/tools links are relative already.
sed -i "s#^include /usr/src/#include $out/root/usr/src/#" "$hdr/Makefile"
# kbuild skips module BTF without a vmlinux next to the headers. Debian
# ships a BTF-only one there; should a headers package lack it, take the
# ELF out of the image (its .BTF section is the same bytes).
if [ "$(readelf -S "$hdr/vmlinux" 2>/dev/null | grep -c ' \.BTF ')" = 0 ]; then
	gx_log "stock kernel: $hdr has no vmlinux with BTF: extracting it from the image"
	"$GXVM_DIR/extract-vmlinux.sh" "$tmp/root/boot/vmlinuz-$kver" "$hdr/vmlinux"
fi
[ "$(readelf -S "$hdr/vmlinux" 2>/dev/null | grep -c ' \.BTF ')" != 0 ] ||
	gx_die "$hdr/vmlinux has no .BTF section: modules built against it would lack BTF"
# modules.dep is made at install time; make it for the unpacked tree.
depmod -b "$tmp/root" "$kver" || gx_die "depmod failed for $tmp/root"
cp "$tmp/root/boot/vmlinuz-$kver" "$tmp/bzImage"
echo "$kver" >"$tmp/kver"
ln -s "root/usr/src/linux-headers-$kver" "$tmp/build"
rm -rf "$out"; mv "$tmp" "$out"
touch "$out/.complete"
gx_log "stock kernel: $(paste -sd',' "$out/versions") -> $out"
echo "$out"
