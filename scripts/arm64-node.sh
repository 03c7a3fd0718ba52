#!/bin/sh
# Unpacks Debian's arm64 `nodejs` and the libraries it needs into a directory
# (default /opt/runwarden-arm64-node), so that test/consumer.test.ts can run the
# linux-arm64 prebuild on an x86-64 machine:
#
#   qemu-aarch64-static -L /opt/runwarden-arm64-node /opt/runwarden-arm64-node/usr/bin/node app.mjs
#
# Why not `apt-get install nodejs:arm64`: Debian's nodejs is not co-installable
# across architectures (Multi-Arch: allowed), so apt would remove the machine's
# own x86-64 node to install it. The packages are only downloaded and unpacked
# here; nothing is installed into the system. Needs `dpkg --add-architecture
# arm64` and `apt-get update` first (the script does both when run as root), and
# qemu-user-static for running it.
set -eu
dest="${1:-/opt/runwarden-arm64-node}"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
  apt-get update -qq
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# nodejs:arm64 and libnode's dependencies (arm64), plus the architecture-independent
# modules Debian's node loads from /usr/share/nodejs at start-up.
apt-get download -q \
  nodejs:arm64 libnode108:arm64 libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 libbrotli1:arm64 \
  libc-ares2:arm64 libicu72:arm64 libnghttp2-14:arm64 libssl3:arm64 libuv1:arm64 zlib1g:arm64 \
  node-acorn node-cjs-module-lexer node-undici node-busboy node-xtend
mkdir -p "$dest"
for deb in ./*.deb; do dpkg-deb -x "$deb" "$dest"; done
qemu-aarch64-static -L "$dest" "$dest/usr/bin/node" -e 'console.log(`arm64 node ${process.version} (${process.arch}) ready`)'
