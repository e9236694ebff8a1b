#!/usr/bin/env bats
# cli.bats — the command a user meets (issue 13): --help of every command (exit 0, touching
# nothing), --version, one-line usage errors (exit 2), the man page, and the mount
# conventions: mount.fuse3's calling form, `mount -t fuse.runfs`, `mount --fstab`, the usual
# mount options, runfs's own options as -o options, ro in /proc/mounts, absolute paths, --log.
load lib
bats_require_minimum_version 1.5.0

setup() {
  runfs_workdir
  RUNFS_ABS=$(realpath "$RUNFS")
  ROOT=$(realpath "$BATS_TEST_DIRNAME/../..")
}

teardown() {
  runfs_teardown
}

# Every command `runfs --help` lists (so a new command is checked too).
COMMANDS=$("${RUNFS:-$BATS_TEST_DIRNAME/../../build/runfs}" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')

# ere TEXT: TEXT as an extended regex that matches itself (a URI holds ? and .).
ere() { printf '%s' "$1" | sed 's/[][\.*^$?+(){}|]/\\&/g'; }

@test "--help: every command answers with its own usage, exit 0, and creates nothing" {
  cd "$WORK"
  local c
  for c in $COMMANDS; do
    run "$RUNFS_ABS" "$c" --help
    assert_success
    assert_line --index 0 --partial "usage: runfs $c"
    # Wherever --help sits among the arguments.
    run "$RUNFS_ABS" "$c" "$WORK/x.db" --help
    assert_success
    assert_line --index 0 --partial "usage: runfs $c"
  done
  run "$RUNFS_ABS" --help
  assert_success
  for c in $COMMANDS; do assert_output --partial "  $c "; done
  run "$RUNFS_ABS" -h
  assert_success
  # Nothing was created: no store called --help, no x.db.
  assert_equal "$(ls -A "$WORK")" mnt
}

@test "--version and -V print the version" {
  run "$RUNFS" --version
  assert_success
  assert_output --regexp '^runfs [0-9]+\.[0-9]+\.[0-9]+'
  run "$RUNFS" -V
  assert_success
  assert_output --regexp '^runfs [0-9]+\.[0-9]+\.[0-9]+'
}

# loaded CMD...: the shared objects the dynamic loader opened for CMD, one a line (its own
# trace, LD_DEBUG=files, not runfs's word).
loaded() {
  LD_DEBUG=files LD_DEBUG_OUTPUT=$WORK/ld "$@" >/dev/null 2>&1 || true
  sed -n 's/.*file=\([^ ]*\) .*\[0\];.*generating link map.*/\1/p' "$WORK"/ld.* | sort -u
  rm -f "$WORK"/ld.*
}

@test "libpq is loaded only for a postgresql:// store, never for --help or a SQLite store" {
  ev_start | "$RUNFS" put -q "$WORK/lite.db" t r
  run loaded "$RUNFS" --help
  assert_output --partial libsqlite3
  refute_output --partial libpq
  run loaded "$RUNFS" ls "$WORK/lite.db" threads/t/runs
  assert_output --partial libsqlite3
  refute_output --partial libpq
  refute_output --partial libkrb5
  if on_pg; then
    run loaded "$RUNFS" ls "$STORE"
    assert_output --partial librunstore-pg.so
    assert_output --partial libpq
  fi
}

@test "a postgresql:// store without librunstore-pg.so beside the library: its file and why" {
  # The library alone in a folder of its own, which LD_LIBRARY_PATH puts first.
  local lib
  lib=$(ldd "$RUNFS_ABS" | awk '$1 ~ /^librunstore\.so/ { print $3 }')
  mkdir "$WORK/lib"
  [ -z "$lib" ] || cp "$lib" "$WORK/lib/"
  run -2 env LD_LIBRARY_PATH="$WORK/lib" "$RUNFS_ABS" ls "postgresql://nobody:s3cret@/db?host=$WORK/none"
  assert_output --partial "cannot load the PostgreSQL backend $WORK/lib/librunstore-pg.so"
  assert_output --partial "cannot open shared object file"
  refute_output --partial s3cret
  # --version says the backend is missing rather than failing.
  run -0 env LD_LIBRARY_PATH="$WORK/lib" "$RUNFS_ABS" --version
  assert_output --partial "no PostgreSQL backend (librunstore-pg.so not loaded)"
}

@test "usage errors: one line with a hint, exit 2" {
  cd "$WORK"
  local args
  while IFS= read -r args; do
    eval "run \"\$RUNFS_ABS\" $args"
    [ "$status" -eq 2 ] || fail "runfs $args: exit $status, expected 2"
    [ "${#lines[@]}" -eq 1 ] || fail "runfs $args printed ${#lines[@]} lines: $output"
    assert_output --partial -- "--help'"
  done <<'ARGS'
frobnicate
put only.db
cat only.db
verify
verify a.db b.db
umount
mount
mount --bogus a.db m
mount -o frob a.db m
mount -o thread a.db m
mount -o allow_delete=yes a.db m
mount --sync sometimes a.db m
mount --follow-timeout -3 a.db m
ARGS
  run "$RUNFS_ABS"
  assert_equal "$status" 2
  assert_equal "$(ls -A "$WORK")" mnt
}

@test "man page: renders without warnings and names every option of every --help" {
  local page=$ROOT/man/runfs.1 text
  run env MANWIDTH=80 man --warnings -l "$page"
  assert_success
  text=$(MANWIDTH=200 man -l "$page" 2>/dev/null)
  # man prints warnings to stderr: none.
  assert_equal "$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)" ""
  local c opt n=0
  for c in $COMMANDS; do
    [[ $text == *"runfs $c"* || $text == *"$c "* ]] || fail "man page lacks command $c"
    for opt in $("$RUNFS" "$c" --help | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u); do
      n=$((n + 1))
      [[ $text == *"$opt"* ]] || fail "man page lacks $opt (from runfs $c --help)"
    done
  done
  # The usual mount options --help lists are there too.
  for opt in $("$RUNFS" mount --help | sed -n '/usual mount options/,/^mount -t/p' |
      grep -oE '[a-z_][a-z_.*-]*[a-z*]' | grep -vE '^(usual|mount|options|are|taken|too|to|the|kernel|for|ignored|here|t|fuse.runfs|and|etc|fstab|lines|work|through|mount.fuse3|logs|go|syslog|where|there|is|one|log|stderr|in|foreground|-t)$'); do
    n=$((n + 1))
    [[ $text == *"$opt"* ]] || fail "man page lacks the mount option $opt"
  done
  [ "$n" -ge 20 ] || fail "only $n options checked"
}

@test "man page: meson install puts runfs(1) in share/man/man1" {
  local dest=$WORK/dest
  run meson install -C "$ROOT/build" --no-rebuild --destdir "$dest"
  assert_success
  local page
  page=$(find "$dest" -path '*/share/man/man1/runfs.1*' | head -n 1)
  [ -n "$page" ] || fail "no runfs.1 under $dest"
  run env MANWIDTH=80 man -l "$page"
  assert_success
  assert_output --partial "runfs mount"
}

# ---- mount conventions ----

@test "mount.fuse3's form: runfs STORE MNT -o OPTS, with runfs's own options as -o options" {
  skip_on_pg "a relative store path"
  mkdir -p "$WORK/c"
  cd "$WORK"
  # Relative paths, as a user types them.
  # A new store: -o create, as --create, makes it.
  run timeout 20 "$RUNFS_ABS" store.db mnt -o user=alice,thread=T1,allow_delete,follow_timeout=5,sync=full,create
  assert_success
  MOUNTS+=("$MNT")
  wait_for 10 test -f "$MNT/README"
  run cat "$MNT/.runfs/status.json"
  assert_output --partial '"user":"alice"'
  assert_output --partial '"thread":"T1"'
  assert_output --partial '"allow_delete":true'
  assert_output --partial '"follow_timeout":5'
  assert_output --partial '"sync":"full"'
  # Both paths absolute in /proc/mounts.
  grep -q "^runfs:$STORE $MNT fuse.runfs " /proc/mounts || fail "$(grep runfs-bats /proc/mounts | grep "$WORK")"
}

@test "usual mount options are accepted; ro shows ro in /proc/mounts and findmnt" {
  runfs_mount "$STORE" "$MNT" -o noatime,nodev,nosuid,default_permissions,nofail,_netdev,x-systemd.automount,x-systemd.requires=network.target,defaults,auto,rw
  grep -q " $MNT fuse.runfs rw," /proc/mounts || fail "$(grep " $MNT " /proc/mounts)"
  local opts; opts=$(findmnt -no OPTIONS "$MNT")
  [[ $opts == *noatime* && $opts == *nodev* && $opts == *nosuid* && $opts == *default_permissions* ]] ||
    fail "options not applied: $opts"
  mkdir -p "$MNT/threads/t1/runs/r1"
  ev_start >> "$MNT/threads/t1/runs/r1/events.jsonl"
  runfs_mount "$STORE" "$WORK/ro" -o ro,allow_other
  grep -q "^runfs:$STORE $WORK/ro fuse.runfs ro," /proc/mounts || fail "$(grep " $WORK/ro " /proc/mounts)"
  assert_equal "$(findmnt -no OPTIONS "$WORK/ro" | cut -d, -f1)" ro
  cmp "$WORK/ro/threads/t1/events.jsonl" "$MNT/threads/t1/events.jsonl"
  run bash -c "ev_start >> '$WORK/ro/threads/t1/runs/r1/events.jsonl'"
  assert_failure
  assert_output --partial "Read-only file system"
}

@test "a relative MOUNTPOINT: SIGTERM and SIGINT unmount it, nothing stale is left" {
  cd "$WORK"
  local sig pid
  for sig in TERM INT; do
    mkdir -p "m-$sig"
    RUNFS_TEST_WORK=$WORK timeout 20 "$RUNFS_ABS" mount --create "st-$sig.db" "m-$sig"
    MOUNTS+=("$WORK/m-$sig")
    wait_for 10 test -f "m-$sig/README"
    grep -q "^runfs:$WORK/st-$sig.db $WORK/m-$sig fuse.runfs " /proc/mounts ||
      fail "$(grep "$WORK" /proc/mounts)"
    # The same relative command line may run in another suite at once: the daemon is the one
    # that inherited this test's marker.
    pid=$(for p in $(pgrep -f "runfs mount --create st-$sig.db m-$sig\$"); do
      tr '\0' '\n' <"/proc/$p/environ" | grep -qx "RUNFS_TEST_WORK=$WORK" && echo "$p"
    done | head -1)
    [ -n "$pid" ]
    kill -"$sig" "$pid"
    wait_for 10 bash -c "! grep -q ' $WORK/m-$sig ' /proc/mounts" || fail "SIG$sig left $WORK/m-$sig mounted"
    wait_for 10 bash -c "! kill -0 $pid"
  done
}

@test "--log FILE keeps the daemon's lines (mount, refusals) when there is no syslog" {
  runfs_mount "$STORE" "$MNT" -o log="$WORK/runfs.log"
  mkdir -p "$MNT/threads/t1/runs/r1"
  run bash -c "echo '{\"event_type\":\"nope\"}' >> '$MNT/threads/t1/runs/r1/events.jsonl'"
  assert_failure
  runfs_unmount "$MNT"
  run cat "$WORK/runfs.log"
  assert_line --index 0 --regexp "^[0-9T:-]+Z runfs\[[0-9]+\]: mounted $(ere "$STORE") at $MNT$"
  assert_output --partial "refused threads/t1/runs/r1/events.jsonl"
  assert_output --partial "EINVAL"
  assert_output --partial "unmounting $MNT"
}

# `mount -t fuse.runfs` runs mount.fuse3, which looks runfs up on a fixed PATH: the test
# works in a private mount namespace where /usr/local/sbin holds this build's runfs.
in_namespace() {
  mkdir -p "$WORK/bin"
  ln -sf "$RUNFS_ABS" "$WORK/bin/runfs"
  unshare -m --propagation private bash -euc "mount --bind '$WORK/bin' /usr/local/sbin; $1"
}

@test "mount -t fuse.runfs STORE MNT -o OPTS works through mount.fuse3" {
  command -v mount.fuse3 >/dev/null || skip "mount.fuse3 is not installed"
  mkdir -p "$WORK/seed"
  runfs_mount "$STORE" "$WORK/seed"
  mkdir -p "$WORK/seed/threads/t1/runs/r1"
  ev_start >> "$WORK/seed/threads/t1/runs/r1/events.jsonl"
  runfs_unmount "$WORK/seed"
  run in_namespace "
    mount -t fuse.runfs '$STORE' '$MNT' -o ro,allow_other,noatime,nofail,_netdev,x-systemd.automount,thread=t1
    for i in \$(seq 200); do [ -f '$MNT/README' ] && break; sleep 0.05; done
    grep ' $MNT ' /proc/self/mounts
    cat '$MNT/threads/t1/runs/r1/events.jsonl'
    ls '$MNT/threads'
    umount '$MNT'
    ! grep ' $MNT ' /proc/self/mounts"
  assert_success
  assert_line --index 0 --regexp "^runfs:$(ere "$STORE") $MNT fuse.runfs ro,"
  assert_line --index 1 --partial '"event_type":"run.start"'
  assert_line --index 2 t1
}

@test "mount --fstab FILE MNT: an fstab line as the README shows it" {
  command -v mount.fuse3 >/dev/null || skip "mount.fuse3 is not installed"
  printf '# runfs\n%s  %s  fuse.runfs  ro,allow_other,user=alice,nofail,_netdev  0 0\n' \
    "$STORE" "$MNT" > "$WORK/fstab"
  mkdir -p "$WORK/seed"
  runfs_mount "$STORE" "$WORK/seed" --user alice
  mkdir -p "$WORK/seed/threads/ta/runs/r1"
  ev_start >> "$WORK/seed/threads/ta/runs/r1/events.jsonl"
  runfs_unmount "$WORK/seed"
  run in_namespace "
    mount --fstab '$WORK/fstab' '$MNT'
    for i in \$(seq 200); do [ -f '$MNT/README' ] && break; sleep 0.05; done
    grep ' $MNT ' /proc/self/mounts
    cat '$MNT/.runfs/status.json'
    ls '$MNT/threads'
    umount '$MNT'"
  assert_success
  assert_line --index 0 --regexp "^runfs:$(ere "$STORE") $MNT fuse.runfs ro,"
  assert_line --index 1 --partial '"user":"alice"'
  assert_line --index 2 ta
}

@test "scripts/demo keeps an existing demo.db and says so; --fresh rebuilds it" {
  export RUNFS_DEMO_STORE=$WORK/demo.db
  run timeout 300 "$ROOT/scripts/demo" "$MNT"
  assert_success
  MOUNTS+=("$MNT")
  mkdir -p "$MNT/threads/mine/runs/r1"
  ev_start >> "$MNT/threads/mine/runs/r1/events.jsonl"
  runfs_unmount "$MNT"
  run timeout 300 "$ROOT/scripts/demo" "$MNT"
  assert_success
  assert_output --partial "$WORK/demo.db exists: mounting it as it is"
  [ -f "$MNT/threads/mine/runs/r1/events.jsonl" ]
  [ -f "$MNT/threads/demo-thread/runs/run-1/seal.json" ]
  runfs_unmount "$MNT"
  run timeout 300 "$ROOT/scripts/demo" --fresh "$MNT"
  assert_success
  [ ! -e "$MNT/threads/mine" ]
  [ -f "$MNT/threads/demo-thread/runs/run-1/seal.json" ]
}

# setup_tree: a copy of the scripts in $WORK/tree, and stubs in $WORK/stubs for what touches
# the machine: dpkg-query says a package is installed when it is in $WORK/installed, apt-get
# appends what it is asked for to $WORK/apt.log, meson and ninja do nothing, and the tree's
# build/runfs exits 3 (the demo stops there, after its setup).
setup_tree() {
  mkdir -p "$WORK/tree/scripts" "$WORK/tree/build" "$WORK/stubs"
  cp "$ROOT/scripts/setup" "$ROOT/scripts/demo" "$WORK/tree/scripts/"
  touch "$WORK/tree/build/build.ninja" "$WORK/installed"
  printf '#!/bin/sh\ngrep -qx "$3" %s/installed && echo "install ok installed"\n' "$WORK" > "$WORK/stubs/dpkg-query"
  printf '#!/bin/sh\necho "$@" >> %s/apt.log\n' "$WORK" > "$WORK/stubs/apt-get"
  printf '#!/bin/sh\nexit 0\n' > "$WORK/stubs/meson"
  cp "$WORK/stubs/meson" "$WORK/stubs/ninja"
  printf '#!/bin/sh\nexit 3\n' > "$WORK/tree/build/runfs"
  chmod 755 "$WORK/stubs/"* "$WORK/tree/build/runfs"
}

@test "scripts/demo installs what building and mounting need, never the tests' packages" {
  setup_tree
  # The test-only packages an independent list names: none is needed to build or mount.
  local p tests_only="libcmocka-dev bats valgrind clang postgresql-15 chromium nodejs python3-cryptography libxml2-utils"
  # A fresh machine: the demo asks apt-get for the build's packages and nothing of the tests'.
  PATH=$WORK/stubs:$PATH RUNFS_DEMO_STORE=$WORK/demo.db run -3 bash "$WORK/tree/scripts/demo" "$MNT"
  assert_output --partial "setup: installing "
  run grep -E '^install ' "$WORK/apt.log"
  assert_success
  for p in libfuse3-dev fuse3 libsqlite3-dev libpq-dev libcjson-dev libssl-dev meson gcc; do
    [[ " $output " == *" $p "* ]] || fail "the demo did not install $p: $output"
  done
  for p in $tests_only; do
    [[ " $output " != *" $p "* ]] || fail "the demo installed the tests' $p: $output"
  done
  # A machine with the runtime packages: the demo installs nothing; the tests add theirs.
  bash "$WORK/tree/scripts/setup" --list > "$WORK/installed"
  rm -f "$WORK/apt.log"
  PATH=$WORK/stubs:$PATH RUNFS_DEMO_STORE=$WORK/demo.db run -3 bash "$WORK/tree/scripts/demo" "$MNT"
  [ ! -e "$WORK/apt.log" ] || fail "apt-get was asked for: $(cat "$WORK/apt.log")"
  PATH=$WORK/stubs:$PATH run bash "$WORK/tree/scripts/setup" --tests
  assert_success
  run grep -E '^install ' "$WORK/apt.log"
  for p in $tests_only; do
    [[ " $output " == *" $p "* ]] || fail "setup --tests did not install $p: $output"
  done
  [[ " $output " != *" libfuse3-dev "* ]] || fail "setup --tests reinstalled a build package: $output"
}

@test "a runfs not installed needs no file of its source tree: the contract is built in" {
  "$RUNFS" put "$STORE" t r <<<"$(ev_start)" >/dev/null
  # The checkout out of reach, as a clone in /root is to other uids: an empty folder over
  # contracts/, in a mount namespace of this command's own.
  mkdir -p "$WORK/empty"
  run unshare -m bash -c "mount --bind '$WORK/empty' '$ROOT/contracts' && '$RUNFS_ABS' cat '$STORE' contract.json"
  assert_success
  [ "$output" = "$(cat "$ROOT/contracts/run_event_stream_contract.json")" ] ||
    fail "contract.json is not the contract the build read"
  run unshare -m bash -c "mount --bind '$WORK/empty' '$ROOT/contracts' && '$RUNFS_ABS' put '$STORE' t r <<<'{\"event_type\":\"nope\"}'"
  assert_failure
  assert_output --partial "unknown event type 'nope' (not in the contract)"
}

@test "the README's tour runs as written right after scripts/demo" {
  # The checkout as the tour sees it: scripts/demo's mnt and demo.db, build/runfs.
  mkdir -p "$WORK/build"
  ln -s "$RUNFS_ABS" "$WORK/build/runfs"
  RUNFS_DEMO_STORE=$WORK/demo.db run timeout 300 "$ROOT/scripts/demo" "$MNT"
  assert_success
  MOUNTS+=("$MNT")
  sed -n '/^## A five-minute tour/,/^Without a mount/p' "$ROOT/README.md" | sed -n 's/^    //p' > "$WORK/tour.sh"
  grep -q 'once/run.terminal' "$WORK/tour.sh" || fail "no tour in the README"
  # Every command that fails says so; the tour's one refusal is the line it marks EINVAL.
  run bash -c "cd '$WORK' && trap 'echo \"FAILED: \$BASH_COMMAND\"' ERR && . ./tour.sh 2>&1"
  assert_success
  refute_output --partial busy
  run grep '^FAILED: ' <<<"$output"
  assert_output --partial '"nope"'
  assert_equal "${#lines[@]}" 1
  grep -q " $MNT fuse.runfs " /proc/mounts || fail "the tour's last line did not mount demo.db again"
  [ -f "$MNT/threads/t1/runs/r1/seal.json" ] || fail "the tour's seal is not there"
}

@test "README: a standalone manual that names every option of --help" {
  local readme=$ROOT/README.md c opt
  run grep -nE '\.\./|DESIGN\.md|shared/' "$readme"
  assert_failure
  for c in $COMMANDS; do
    grep -q "runfs $c" "$readme" || fail "README never shows runfs $c"
    for opt in $("$RUNFS" "$c" --help | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u); do
      grep -qF -- "$opt" "$readme" || fail "README lacks $opt (from runfs $c --help)"
    done
  done
  for opt in EINVAL EMSGSIZE EEXIST EPERM EROFS ENOENT EACCES fstab systemd transcript.md \
    rejects.jsonl follow.jsonl; do
    grep -qF -- "$opt" "$readme" || fail "README lacks $opt"
  done
}

@test "the README's systemd unit: systemd-analyze accepts it, and its commands mount and unmount" {
  command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
  local unit=$WORK/runfs-runs.service
  # The unit as the README shows it, with this build's runfs and this test's paths.
  sed -n '/# \/etc\/systemd\/system\/runfs-runs.service/,/WantedBy/p' "$ROOT/README.md" |
    tail -n +2 | sed -e 's/^    //' -e "s|/usr/local/bin/runfs|$RUNFS_ABS|" \
      -e "s|/srv/runs.db|$(printf '%s' "$STORE" | sed 's/[&|]/\\&/g')|g" -e "s|/mnt/runs|$MNT|g" > "$unit"
  grep -q '^ExecStart=' "$unit" || fail "no unit in the README"
  run systemd-analyze verify "$unit"
  assert_success
  # What systemd would run: ExecStartPre, ExecStart (in the foreground), then ExecStop.
  local pre start stop pid
  pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
  start=$(sed -n 's/^ExecStart=//p' "$unit")
  stop=$(sed -n 's/^ExecStop=//p' "$unit")
  # The unit mounts a store that exists (a mount creates none without --create).
  on_pg || ev_start | "$RUNFS" put -q "$STORE" t0 r0
  $pre
  $start 2>"$WORK/journal" & pid=$!
  MOUNTS+=("$MNT")
  wait_for 10 test -f "$MNT/README"
  grep -q " $MNT fuse.runfs " /proc/mounts
  $stop
  wait_for 10 bash -c "! kill -0 $pid" || fail "the daemon outlived ExecStop"
  wait "$pid"
  grep -q "mounted $STORE at $MNT" "$WORK/journal"
}
