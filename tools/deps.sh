#!/usr/bin/env bash
# Installs what gpuext needs to build and test on Debian 12 (bookworm), as root.
# A no-op when everything is already there. Used by tools/main.sh, tools/test.sh
# and .ci/run.
#
# libbpf >= 1.4 (struct_ops types defined by modules) and bpftool 7.5 come from
# bookworm-backports, which is added to the Suites: line of the existing Debian
# entry; no other host is ever written.
set -euo pipefail

# package  (apt target release or "-")
PKGS=(
  "build-essential -"
  "cmake -"
  "pkg-config -"
  "python3 -"
  "clang-22 -"
  "llvm-22 -"
  "llvm-22-dev -"
  "spirv-tools -"
  "mesa-vulkan-drivers -"
  "libvulkan-dev -"
  "libclang-rt-22-dev -"
  "libelf-dev -"
  "zlib1g-dev -"
  "libbpf-dev bookworm-backports"
  "bpftool bookworm-backports"
  # tools/vm: QEMU guests, their initramfs, the hmm track's kernel build
  "qemu-system-x86 -"
  "busybox-static -"
  "cpio -"
  "kmod -"
  "xz-utils -"
  "zstd -"
  "libzstd-dev -"
  "linux-source-6.12 -"
  "dwarves -"
  "flex -"
  "bison -"
  "bc -"
  "libssl-dev -"
)

need_backports_libbpf() {
  local v
  v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null || true)
  [ -z "$v" ] && return 0
  dpkg --compare-versions "$v" lt "1:1.4" && return 0
  return 1
}

missing=()
for entry in "${PKGS[@]}"; do
  set -- $entry
  if ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$entry")
  elif [ "$1" = libbpf-dev ] && need_backports_libbpf; then
    missing+=("$entry")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all build and test dependencies are installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run this script as root (it uses apt-get), or install them yourself" >&2
  exit 1
fi

src=/etc/apt/sources.list.d/debian.sources
if ! grep -qs 'bookworm-backports' "$src" /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null; then
  if [ -f "$src" ] && grep -q '^Suites:.*\bbookworm\b' "$src"; then
    echo "deps: enabling bookworm-backports in $src (for libbpf >= 1.4)"
    sed -i '0,/^Suites:\(.*\)\bbookworm\b\(.*\)$/s//Suites:\1bookworm\2 bookworm-backports/' "$src"
  else
    echo "deps: cannot find the Debian bookworm entry in $src to add bookworm-backports;" >&2
    echo "      add 'bookworm-backports' to its Suites: line and run again" >&2
    exit 1
  fi
fi

echo "deps: installing ${#missing[@]} package(s)..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
plain=() ; bpo=()
for entry in "${missing[@]}"; do
  set -- $entry
  if [ "$2" = "-" ]; then plain+=("$1"); else bpo+=("$1"); fi
done
[ ${#plain[@]} -gt 0 ] && apt-get install -y -qq --no-install-recommends "${plain[@]}"
[ ${#bpo[@]} -gt 0 ] && apt-get install -y -qq --no-install-recommends -t bookworm-backports "${bpo[@]}"
echo "deps: done"
