#!/bin/sh
# selfckpt where users deploy, and the restorer's guards. Programs run under
# selfckpt-run, are checkpointed by SIGUSR2 mid-way and killed with SIGKILL;
# what a restore prints after the lines printed before the checkpoint must be
# exactly what an uninterrupted run prints.
#
#   deploy.sh BUILD roundtrip SETTING PROGRAM
#     The checkpoint, two restores, a checkpoint of the second restored process
#     and its restore, all inside one setting, made by tests/progs/sandbox (a
#     seccomp filter, a capability set, a user):
#     SETTING: root, user, docker-root, docker-user, k8s-restricted
#     PROGRAM: c-single, c-threads (4 threads), python
#   deploy.sh BUILD guard CASE
#     writable   an image others may write is refused (66), nothing run
#     owner      root restores an image of uid 65534 (0600, in a 0700 folder)
#     killed     kill -9 of selfckpt-restore ends the restored process too
#     race       60 restores under load all get their ids back
#     set-mm     a system that refuses PR_SET_MM: refused (69), nothing run
#     clone3     clone3 refused with ENOSYS or EPERM: restored all the same
#     bitflips N N copies with one random bit flipped: each refused (65) with
#                nothing run
#
# Runs as root (it drops to uid 65534 itself). Exit 0 when right, 77 when this
# machine cannot run the case (no user namespaces), 1 with the reason on
# standard error otherwise.
set -u
build=$(cd "$1" && pwd) mode=$2
shift 2
nobody=65534
sandbox=$build/tests/progs/sandbox
loads=

fail() {
	echo "$*" >&2
	exit 1
}

# Everything the processes run or read lies in a folder of their own, readable
# by all, whatever the permissions of the build folder's parents.
dir=$(mktemp -d "${TMPDIR:-/tmp}/sc-deploy-XXXXXX")
trap 'for p in $loads; do kill "$p" 2> /dev/null; done; rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir "$dir/bin" "$dir/lib" "$dir/work"
cp "$build/bin/selfckpt-run" "$build/bin/selfckpt-restore" "$build/tests/progs/workers" \
	"$dir/bin/"
cp "$build/lib/libselfckpt.so.1" "$dir/lib/"
chmod -R a+rX "$dir/bin" "$dir/lib"
work=$dir/work
restore=$dir/bin/selfckpt-restore
cd "$work" || exit 1

lines() {
	wc -l < "$1"
}

# wait_for CONDITION...: up to 20 s.
wait_for() {
	i=0
	while ! "$@" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	"$@"
}

has_lines() {
	[ -f "$1" ] && [ "$(lines "$1")" -ge "$2" ]
}

# checkpoint AT JAIL... -- PROGRAM...: run PROGRAM under selfckpt-run inside
# JAIL (sandbox options), SIGUSR2 once it printed AT lines, kill -9 once the
# image is there. Leaves before.txt and $image.
checkpoint() {
	at=$1
	shift
	rm -rf ckpt
	: > before.txt
	"$sandbox" "$@" < /dev/null > before.txt 2> run.err &
	pid=$!
	wait_for has_lines before.txt "$at" || fail "the program printed no $at lines"
	kill -USR2 "$pid"
	wait_for test -e ckpt/latest || { cat run.err >&2; fail "no image after SIGUSR2"; }
	kill -9 "$pid" 2> /dev/null
	wait "$pid" 2> /dev/null
	image=$work/ckpt/$(readlink ckpt/latest)
}

# run_workers AT STEPS [JAIL...]: the single-threaded program, and its reference
# output; it holds after line AT until the checkpoint stops it.
run_workers() {
	at=$1 steps=$2
	shift 2
	"$dir/bin/workers" 0 "$steps" > reference.txt || fail "the reference run failed"
	checkpoint "$at" "$@" -- "$dir/bin/selfckpt-run" --dir "$work/ckpt" -- \
		"$dir/bin/workers" 0 "$steps" $((at - 1))
}

# right OUT: the lines before the checkpoint, then OUT, are the reference.
right() {
	first=$(head -n 1 "$1" | cut -d' ' -f1)
	[ -n "$first" ] || return 1
	head -n "$first" before.txt > combined.txt
	cat "$1" >> combined.txt
	cmp -s combined.txt reference.txt
}

# ---- round trips in each setting ----

roundtrip() {
	setting=$1 what=$2
	case $setting in
	root) jail= ;;
	user) jail="--user $nobody" ;;
	docker-root) jail="--seccomp docker --caps docker" ;;
	docker-user) jail="--seccomp docker --caps docker --user $nobody" ;;
	k8s-restricted) jail="--seccomp docker --caps none --no-new-privs --user $nobody" ;;
	*) fail "unknown setting $setting" ;;
	esac
	case $setting in *user | k8s*) chown "$nobody:$nobody" "$work" ;; esac
	case $what in
	c-single) set -- "$dir/bin/workers" 0 40 ;;
	c-threads) set -- "$dir/bin/workers" 4 40 ;;
	python)
		py=/usr/bin/python3
		[ -x $py ] || py=$(command -v python3)
		cat > loop.py <<'PY'
import time
total = 0
for i in range(40):
    total += sum(j * j for j in range(30000))
    print(i, total, flush=True)
    time.sleep(0.05)
PY
		chmod a+r loop.py
		set -- "$py" loop.py
		;;
	*) fail "unknown program $what" ;;
	esac
	# shellcheck disable=SC2086
	"$sandbox" $jail -- "$@" < /dev/null > reference.txt 2> reference.err ||
		{ cat reference.err >&2; fail "$setting: the reference run of $what failed"; }
	# The C program holds after line 10 until the checkpoint stops it.
	hold=
	[ "$what" = python ] || hold=9
	# shellcheck disable=SC2086
	checkpoint 10 $jail -- "$dir/bin/selfckpt-run" --dir "$work/ckpt" -- "$@" $hold
	for n in 1 2; do
		: > after$n.txt
		# shellcheck disable=SC2086
		"$sandbox" $jail -- "$restore" "$image" < /dev/null > after$n.txt 2> restore$n.err &
		rpid=$!
		[ $n -eq 2 ] && checkpoint_again after2.txt
		wait "$rpid"
		status=$?
		[ $status -eq 0 ] || { cat restore$n.err >&2; fail "$setting: restore $n of $what exited $status"; }
		right after$n.txt || {
			diff combined.txt reference.txt | head -20 >&2
			cat restore$n.err >&2
			fail "$setting: restore $n of $what differs from the uninterrupted run"
		}
	done
	# The image the restored process made of itself, restored in the same setting.
	# shellcheck disable=SC2086
	"$sandbox" $jail -- "$restore" "$image" < /dev/null > after3.txt 2> restore3.err ||
		{ cat restore3.err >&2; fail "$setting: the image of the restored $what does not restore"; }
	first=$(head -n 1 after3.txt | cut -d' ' -f1)
	[ -n "$first" ] || fail "$setting: the image of the restored $what printed nothing"
	tail -n +$((first + 1)) reference.txt | cmp -s - after3.txt ||
		fail "$setting: the image of the restored $what comes back wrong"
}

# checkpoint_again OUT: SIGUSR2 to the process restored by $rpid (selfckpt-restore
# passes signals on) once it printed 3 lines to OUT; $image becomes its image.
checkpoint_again() {
	wait_for has_lines "$1" 3 || fail "$setting: the restored $what printed no 3 lines"
	rm -f "$image" # the restored process needs it no more; its next image may take its name
	kill -USR2 "$rpid"
	wait_for test -e ckpt/latest || fail "$setting: no image of the restored $what"
	image=$work/ckpt/$(readlink ckpt/latest)
}

# ---- the restorer's guards ----

userns_or_skip() {
	unshare --user true 2> /dev/null || { echo "no user namespaces here" >&2; exit 77; }
}

# A refusal: exit @1, a message matching @2, nothing printed by the program.
refused() {
	want=$1 pattern=$2 status=$3
	[ "$status" -eq "$want" ] || { cat restore.err >&2; fail "exit $status, not $want"; }
	grep -qF -- "$pattern" restore.err || { cat restore.err >&2; fail "no message '$pattern'"; }
	[ ! -s after.txt ] || fail "the program ran although the restore was refused"
}

guard_writable() {
	run_workers 4 12
	for m in 0620 0602 0666; do
		chmod "$m" "$image"
		"$restore" "$image" < /dev/null > after.txt 2> restore.err
		refused 66 "'$image' may be written by users other than its owner (mode $m)" $?
	done
	chmod 0600 "$image"
	"$restore" "$image" < /dev/null > after.txt 2> restore.err || fail "the 0600 image failed"
	right after.txt || fail "the 0600 image came back wrong"
}

guard_owner() {
	chown "$nobody:$nobody" "$work"
	run_workers 4 40 --user "$nobody"
	[ "$(stat -c %u:%a "$image")" = "$nobody:600" ] || fail "the image is not 0600 of $nobody"
	[ "$(stat -c %u:%a "$work/ckpt")" = "$nobody:700" ] || fail "its folder is not 0700"
	: > after.txt
	"$restore" "$image" < /dev/null > after.txt 2> restore.err &
	rpid=$!
	wait_for has_lines after.txt 2
	# With its ids, in a user namespace of its own: root there keeps every id mapped.
	inside=0
	for p in $(writers_of "$work/after.txt"); do
		[ "$(readlink "/proc/$p/ns/user")" != "$(readlink /proc/self/ns/user)" ] || continue
		inside=$((inside + 1))
		[ "$(tr -s ' ' < "/proc/$p/uid_map")" = " 0 0 4294967295" ] ||
			fail "root's restored process does not map every uid: $(cat "/proc/$p/uid_map")"
	done
	if unshare --user true 2> /dev/null && [ $inside -eq 0 ]; then
		fail "root's restore did not get its ids back"
	fi
	wait "$rpid" || { cat restore.err >&2; fail "root could not restore the image of uid $nobody"; }
	grep -q "belongs to uid $nobody" restore.err || fail "no warning about the owner"
	right after.txt || fail "the image of uid $nobody came back wrong"
}

# The processes whose standard output is @1.
writers_of() {
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/fd/1" 2> /dev/null)" = "$1" ] && echo "${p#/proc/}"
	done
}

none_writes() {
	[ -z "$(writers_of "$1")" ]
}

guard_killed() {
	checkpoint 3 -- "$dir/bin/selfckpt-run" --dir "$work/ckpt" -- "$dir/bin/workers" 0 1000000
	for ids in "" --new-ids; do
		: > after.txt
		# shellcheck disable=SC2086
		"$restore" $ids "$image" < /dev/null > after.txt 2> restore.err &
		rpid=$!
		wait_for has_lines after.txt 2 || { cat restore.err >&2; fail "no restored output"; }
		kill -9 "$rpid"
		wait "$rpid" 2> /dev/null
		wait_for none_writes "$work/after.txt" ||
			fail "the restored process outlived selfckpt-restore ${ids:-(same ids)}: $(writers_of "$work/after.txt")"
		size=$(lines after.txt)
		sleep 0.3
		[ "$(lines after.txt)" -eq "$size" ] || fail "the restored process still prints"
	done
}

guard_race() {
	userns_or_skip
	run_workers 10 12
	for i in 1 2; do
		sh -c 'while :; do :; done' &
		loads="$loads $!"
	done
	bad=0
	for i in $(seq 60); do
		"$restore" "$image" < /dev/null > after.txt 2> restore.err
		status=$?
		if [ $status -ne 0 ] || ! right after.txt || grep -q "new .*ids" restore.err; then
			bad=$((bad + 1))
			cat restore.err >&2
		fi
	done
	[ $bad -eq 0 ] || fail "$bad of 60 restores under load lost their ids or failed"
}

guard_set_mm() {
	run_workers 4 12
	cp "$image" image.orig
	for ids in "" --new-ids; do
		# shellcheck disable=SC2086
		"$sandbox" --refuse set-mm -- "$restore" $ids "$image" < /dev/null > after.txt \
			2> restore.err
		refused 69 "PR_SET_MM_MAP" $?
		cmp -s "$image" image.orig || fail "the refused restore changed the image"
	done
}

guard_clone3() {
	run_workers 4 12
	for how in clone3-enosys clone3-eperm; do
		"$sandbox" --refuse $how -- "$restore" "$image" < /dev/null > after.txt 2> restore.err ||
			{ cat restore.err >&2; fail "the restore failed where $how"; }
		right after.txt || fail "the restore came back wrong where $how"
	done
}

# flip FILE: one random bit of FILE; prints its offset and bit.
flip() {
	size=$(stat -c %s "$1")
	r=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	off=$((r % size)) bit=$((r / size % 8))
	byte=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\$(printf %o $((byte ^ (1 << bit))))" |
		dd of="$1" bs=1 seek="$off" conv=notrunc 2> /dev/null
	echo "$off.$bit"
}

# The whole-file checksum covers every byte before the trailer, which covers
# itself: every flip is refused, none carries no meaning.
guard_bitflips() {
	n=$1
	run_workers 10 12
	"$restore" "$image" < /dev/null > good.txt 2> restore.err || fail "the image does not restore"
	right good.txt || fail "the image comes back wrong"
	for i in $(seq "$n"); do
		cp "$image" flip.sckpt
		at=$(flip flip.sckpt)
		"$restore" flip.sckpt < /dev/null > after.txt 2> restore.err
		status=$?
		[ $status -eq 65 ] && [ ! -s after.txt ] && continue
		cat restore.err >&2
		cmp -s after.txt good.txt && fail "bit $at flipped (byte.bit): restored all the same"
		fail "bit $at flipped (byte.bit): exit $status, $(lines after.txt) lines printed"
	done
}

case $mode in
roundtrip) roundtrip "$@" ;;
guard)
	case $1 in
	writable | owner | killed | race | set-mm | clone3) "guard_$(echo "$1" | tr - _)" ;;
	bitflips) guard_bitflips "$2" ;;
	*) fail "unknown case $1" ;;
	esac
	;;
*) fail "unknown mode $mode" ;;
esac
exit 0
