#!/usr/bin/env bash
# The README's library example, as a user builds it: `meson install --skip-subprojects` (the
# README's line: nothing of subprojects/libfuse, which runfs links statically) into a scratch
# root, checked to hold no libfuse file, and the PostgreSQL backend's module beside the
# library where the installed runfs finds it; the example taken from README.md, compiled with
# plain -std=c11 -pedantic against the installed header and .so through pkg-config, run on a
# new store; its output is checked with python3.
# usage: consumer.sh BUILDDIR
set -euo pipefail
build=$(realpath "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/runfs-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --no-rebuild --quiet --skip-subprojects --destdir "$tmp/root" >/dev/null
if fuse=$(find "$tmp/root" -name '*fuse*' | grep .); then
  echo "meson install put libfuse's files in the root: $fuse" >&2
  exit 1
fi
python3 - "$src/README.md" "$tmp/events.c" <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
m = re.search(r"^    /\* events\.c:.*?^    }\n", readme, re.S | re.M)
if not m:
    sys.exit("README.md has no events.c example")
open(sys.argv[2], "w").write("".join(l[4:] + "\n" for l in m.group(0).splitlines()))
PY
pc=$(dirname "$(find "$tmp/root" -name runstore.pc | head -1)")
lib=$(dirname "$(find "$tmp/root" -name 'librunstore.so' | head -1)")
# The PostgreSQL backend's module where the library looks for it: beside it (store/pg_load.c).
[ -f "$lib/librunstore-pg.so" ] || { echo "meson install put no librunstore-pg.so beside librunstore.so in $lib" >&2; exit 1; }
runfs=$(find "$tmp/root" -path '*/bin/runfs' | head -1)
LD_LIBRARY_PATH=$lib "$runfs" --version | grep -q 'libpq [0-9]' ||
  { echo "the installed runfs does not load the installed librunstore-pg.so: $(LD_LIBRARY_PATH=$lib "$runfs" --version)" >&2; exit 1; }
export PKG_CONFIG_SYSROOT_DIR=$tmp/root PKG_CONFIG_PATH=$pc
# runstore.h needs no other library's header: --cflags is the one include folder it lives in.
cflags=$(pkg-config --cflags runstore | xargs)
header=$(dirname "$(find "$tmp/root" -name runstore.h | head -1)")
[ "$cflags" = "-I$header" ] || { echo "pkg-config --cflags runstore: '$cflags', not -I$header" >&2; exit 1; }
# A static link finds every library it needs through pkg-config --static.
for l in -lrunstore -lsqlite3 -lpq -lcjson -lcrypto; do
  pkg-config --static --libs runstore | grep -qw -- "$l" || { echo "pkg-config --static --libs runstore lacks $l" >&2; exit 1; }
done
# shellcheck disable=SC2046
cc -std=c11 -pedantic -Wall -Wextra -Werror "$tmp/events.c" $(pkg-config --cflags --libs runstore) \
  -o "$tmp/events"
LD_LIBRARY_PATH=$lib "$tmp/events" "$tmp/store.db" >"$tmp/out"
LD_LIBRARY_PATH=$lib "$tmp/events" "$tmp/store.db" >>"$tmp/out"
python3 - "$tmp/out" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
# the first run prints its one event, the second both
assert len(lines) == 3, lines
recs = [json.loads(l) for l in lines]
assert [r["seq"] for r in recs] == [1, 1, 2], recs
assert all(r["thread_id"] == "t1" and r["run_id"] == "r1" and r["event_type"] == "run.start"
           for r in recs), recs
PY
echo "consumer: the README's example builds with -std=c11 against the installed library and runs"
