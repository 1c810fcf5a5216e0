#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-zdtm.sh - run CRIU's zdtm static tests against selfckpt, as zdtm.py runs
# a static test, with selfckpt in CRIU's place. A measurement, not a test of
# the build: it exits 0 whatever the tests do, and non-zero only when it cannot
# run (64: usage, 69: a missing tool or input, 70: zdtm's library does not build).
#
# Usage: run-zdtm.sh [OPTIONS] CRIU_ZDTM_DIR SELFCKPT_BUILD [TEST...]
#   CRIU_ZDTM_DIR   test/zdtm of a CRIU checkout (lib/, static/, Makefile.inc),
#                   or the checkout itself
#   SELFCKPT_BUILD  a selfckpt build folder (bin/selfckpt-run, bin/selfckpt-restore)
#   TEST...         names of static tests (default: every test of static/Makefile)
#
# For each test:
#   1. Skipped, with the reason, when its .desc says it needs root ('suid'), is
#      run by hand only ('noauto'), is expected to fail to checkpoint ('crfail'),
#      runs only inside namespaces (no 'h' flavor; but see --ipc), or is for another
#      architecture; when its .checkskip fails; when it does not build here.
#   2. Native run: started as zdtm.py starts it (the command of its NAME.pid rule
#      in static/Makefile, the pid file made absolute; TMPDIR, ZDTM_THREAD_BOMB=5;
#      run as root, the ids zdtm.py gives a test that is not 'suid': ZDTM_UID,
#      ZDTM_GID, ZDTM_GROUPS, and write permission on the test folder), waited
#      for until its pid file appears, then SIGTERM, and PASS looked for in the
#      last line of its outfile. A test that does not pass is left out of the
#      measurement; one that has child processes once ready is measured as a
#      process tree (selfckpt checkpoints the test and its children as a job).
#   3. selfckpt run: the same command under SELFCKPT_BUILD/bin/selfckpt-run
#      --dir IMAGES; once the pid file appears, RTMIN+5 (its checkpoint-now
#      signal: zdtm tests use SIGUSR1 and SIGUSR2 themselves, so both of
#      selfckpt-run's triggers are moved to RTMIN+5 and RTMIN+6),
#      wait for IMAGES/latest, kill -9, selfckpt-restore IMAGES/latest in the
#      background (with the test's ids, through setpriv, when run as root), wait
#      until the restored process has its saved command line, SIGTERM to
#      selfckpt-restore (which passes it on), wait, read the outfile.
# --ipc: also run the tests that zdtm runs only inside namespaces because
# they use System V IPC (no 'h' flavor, and shmget, semget or msgget in their
# source): zdtm keeps them out of the host for the fixed keys and ids they
# use, but selfckpt's restore makes an IPC namespace of its own for an image
# with System V objects, so only the native and checkpointed runs share the
# host's (each such test runs alone, as below, and the objects its killed run
# leaves behind are removed after it). Tests that need the other
# namespaces for anything else still fail or are left out by their own checks.
# Every wait gives up after --timeout seconds (30, or the .desc's larger
# 'timeout'), and the test's processes are then killed; the wait for the image
# also ends at selfckpt's first error message (a checkpoint given up).
#
# zdtm's library daemonizes a test: test_init() forks, and the parent writes
# the pid file and exits once the child calls test_daemon(). The process
# started under selfckpt-run is made the test itself, so that selfckpt-run's
# pid is the test's, as the harness expects. The scratch copy of the library is changed (never the
# CRIU checkout): lib/test.c is compiled with -Dfork=zdtm_nodaemon_fork and
# -Dtest_daemon=zdtm_nodaemon_test_daemon, and a small file of this script's,
# lib/zdtm_nodaemon.c, supplies both: with ZDTM_NO_DAEMON=1 in the
# environment (set for native and selfckpt runs alike) the first fork() of
# test.c, the daemonizing one, does not fork and returns 0 (the test goes on
# as the "child": setsid(), its own pid), and test_daemon() writes the pid file
# itself (to the absolute path given) after its usual work. Without the
# variable both behave as zdtm's own. The one line "-include
# zdtm_nodaemon.mk" is appended to the scratch lib/Makefile for this.
#
# Not done as zdtm.py does: hooks (NAME.hook) are not run (those of the tests
# measured here only inspect CRIU's image files); CRIU's 'feature' checks are
# replaced by the native run; tests marked 'excl' run alone, after the others,
# and tests that bind fixed inet ports or use SysV IPC run one at a time.
#
# Output (stdout): one line per test - name, native result, selfckpt result,
# the first line of the reason - then one summary line. Logs, outfiles and
# images stay in the work folder (--work, default $TMPDIR/selfckpt-zdtm).

set -u

JOBS=2
TIMEOUT=30
WORK="${TMPDIR:-/tmp}/selfckpt-zdtm"
KEEP_IMAGES=0
IPC=0
# selfckpt-run's trigger signals: real-time ones, since zdtm tests use SIGUSR1 and SIGUSR2
SIG_SOON=RTMIN+6
SIG_NOW=RTMIN+5

usage() {
	cat <<EOF
Usage: $0 [OPTIONS] CRIU_ZDTM_DIR SELFCKPT_BUILD [TEST...]
Run CRIU's zdtm static tests natively, then checkpointed by selfckpt and
restored, and print one line per test and a summary.

  CRIU_ZDTM_DIR   test/zdtm of a CRIU checkout, or the checkout itself
  SELFCKPT_BUILD  a selfckpt build folder (make BUILD=... all)
  TEST...         static test names (default: all of static/Makefile)

  --jobs N        tests at a time (default $JOBS)
  --timeout S     seconds each step may take (default $TIMEOUT, or the test's
                  larger .desc timeout)
  --work DIR      scratch folder: zdtm built there, logs and images
                  (default \$TMPDIR/selfckpt-zdtm; reused when present)
  --keep-images   keep each test's image (default: removed once restored)
  --ipc           also run the namespace-only tests that use System V IPC
                  (selfckpt's restore makes its own IPC namespace for them)
  --help          print this help and exit

Exit status: 0 when the measurement ran (whatever the tests did); 64 usage;
69 a missing tool or input; 70 zdtm's library does not build.
EOF
}

die() {
	local code=$1
	shift
	echo "run-zdtm.sh: $*" >&2
	exit "$code"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--help | -h) usage; exit 0 ;;
	--jobs) [ $# -ge 2 ] || die 64 "--jobs needs a number"; JOBS=$2; shift 2 ;;
	--timeout) [ $# -ge 2 ] || die 64 "--timeout needs seconds"; TIMEOUT=$2; shift 2 ;;
	--work) [ $# -ge 2 ] || die 64 "--work needs a folder"; WORK=$2; shift 2 ;;
	--keep-images) KEEP_IMAGES=1; shift ;;
	--ipc) IPC=1; shift ;;
	--) shift; break ;;
	-*) usage >&2; die 64 "unknown option '$1'" ;;
	*) break ;;
	esac
done
case "$JOBS$TIMEOUT" in *[!0-9]*) die 64 "--jobs and --timeout take whole numbers" ;; esac
[ "$JOBS" -ge 1 ] && [ "$TIMEOUT" -ge 1 ] || die 64 "--jobs and --timeout must be at least 1"
[ $# -ge 2 ] || { usage >&2; exit 64; }

SRC=$1
SCK=$2
shift 2
[ -d "$SRC/test/zdtm/static" ] && SRC=$SRC/test/zdtm
[ -f "$SRC/lib/test.c" ] && [ -f "$SRC/static/Makefile" ] && [ -f "$SRC/Makefile.inc" ] ||
	die 69 "'$SRC' is not CRIU's test/zdtm (expected lib/test.c, static/Makefile, Makefile.inc)"
SRC=$(cd "$SRC" && pwd)
[ -d "$SCK" ] || die 69 "no selfckpt build folder '$SCK'"
SCK=$(cd "$SCK" && pwd)
RUN=$SCK/bin/selfckpt-run
RESTORE=$SCK/bin/selfckpt-restore
[ -x "$RUN" ] && [ -x "$RESTORE" ] ||
	die 69 "'$SCK' has no bin/selfckpt-run and bin/selfckpt-restore (make BUILD=... all)"
for tool in make cc python3 ar timeout flock; do
	command -v "$tool" >/dev/null || die 69 "'$tool' is needed and not found"
done

# As root, a test that is not 'suid' runs with zdtm.py's ids; the restore then
# runs with them too, as the user whose process it was would run it.
AS_ROOT=0
TEST_ENV=(ZDTM_NO_DAEMON=1 ZDTM_THREAD_BOMB=5 "TMPDIR=${TMPDIR:-/tmp}")
RESTORE_AS=()
if [ "$(id -u)" = 0 ]; then
	AS_ROOT=1
	command -v setpriv >/dev/null || die 69 "'setpriv' is needed to restore with the test's ids"
	TEST_ENV+=(ZDTM_UID=18943 ZDTM_GID=58467 "ZDTM_GROUPS=27495 48244")
	RESTORE_AS=(setpriv --reuid=18943 --regid=58467 --groups=27495,48244)
fi

mkdir -p "$WORK" || die 69 "cannot make the work folder '$WORK'"
WORK=$(cd "$WORK" && pwd)
Z=$WORK/zdtm
STATIC=$Z/static
LOGS=$WORK/logs
IMGS=$WORK/images
RES=$WORK/results
mkdir -p "$LOGS" "$IMGS" "$RES" || die 69 "cannot write in '$WORK'"
rm -f "$RES"/*

# ---- the scratch copy of zdtm and its build ---------------------------------

copy_zdtm() {
	if [ -f "$Z/.source" ] && [ "$(cat "$Z/.source")" = "$SRC" ]; then
		return 0
	fi
	rm -rf "$Z"
	mkdir -p "$Z" && cp -a "$SRC/." "$Z/" || die 69 "cannot copy '$SRC' to '$Z'"
	patch_lib
	echo "$SRC" >"$Z/.source"
}

# The no-daemon switch described in the header comment.
patch_lib() {
	cat >"$Z/lib/zdtm_nodaemon.c" <<'EOF'
/* Written by selfckpt's tests/zdtm/run-zdtm.sh: with ZDTM_NO_DAEMON=1, the test
 * process started is the test itself (no daemonizing fork), and it writes its
 * own pid file once ready. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char *pidfile;
void zdtm_nodaemon_test_daemon(void);
int zdtm_nodaemon_fork(void);
void test_daemon(void);

int zdtm_nodaemon_fork(void)
{
	static int calls;

	if (calls++ == 0 && getenv("ZDTM_NO_DAEMON"))
		return 0;
	return fork();
}

void test_daemon(void)
{
	char tmp[4096];
	int fd;

	zdtm_nodaemon_test_daemon();
	if (!getenv("ZDTM_NO_DAEMON"))
		return;
	snprintf(tmp, sizeof(tmp), "%s.nodaemon", pidfile);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "%d", getpid());
	close(fd);
	rename(tmp, pidfile);
}
EOF
	cat >"$Z/lib/zdtm_nodaemon.mk" <<'EOF'
test.o test.d: CFLAGS += -Dfork=zdtm_nodaemon_fork -Dtest_daemon=zdtm_nodaemon_test_daemon
libzdtmtst.a: zdtm_nodaemon.o
EOF
	echo '-include zdtm_nodaemon.mk' >>"$Z/lib/Makefile"
}

build_lib() {
	make -C "$Z/lib" -j"$JOBS" >"$LOGS/build-lib.log" 2>&1 ||
		die 70 "zdtm's library does not build: see '$LOGS/build-lib.log'"
	nm "$Z/lib/libzdtmtst.a" 2>/dev/null | grep -q 'T zdtm_nodaemon_fork' ||
		die 70 "the no-daemon switch is not in '$Z/lib/libzdtmtst.a'"
}

all_tests() {
	make -s --no-print-directory -C "$STATIC" -f Makefile -f - zdtm-list-tests <<'EOF'
zdtm-list-tests: ; @echo $(TST)
EOF
}

# desc_info NAME...: one line per test, "NAME<TAB>skip reason or -<TAB>timeout<TAB>excl"
desc_info() {
	(cd "$STATIC" && IPC=$IPC python3 - "$@") <<'EOF'
import os, re, sys
arch = os.uname()[4]  # as zdtm.py
ipc = os.environ.get('IPC') == '1'

def uses_sysv_ipc(t):
    return re.search(r'\b(shmget|semget|msgget)\b', open(t + '.c').read()) is not None
for t in sys.argv[1:]:
    d = {}
    if not os.path.exists(t + '.c'):
        print('%s\tno such test in static/\t0\t0' % t)
        continue
    if os.path.exists(t + '.desc') and os.path.getsize(t + '.desc') > 0:
        try:
            # zdtm.py evaluates .desc files the same way
            d = eval(open(t + '.desc').read(), {'os': os})
        except Exception as e:
            d = {}
    flags = d.get('flags', '').split()
    flavors = d.get('flavor', 'h ns uns').split()
    why = '-'
    if 'suid' in flags:
        why = "needs root (flag 'suid')"
    elif 'noauto' in flags:
        why = "run by hand only (flag 'noauto')"
    elif 'crfail' in flags:
        why = "checkpoint expected to fail (flag 'crfail')"
    elif 'h' not in flavors and not (ipc and 'ns' in flavors and uses_sysv_ipc(t)):
        why = 'needs namespaces (flavors: %s)' % ' '.join(flavors)
    elif d.get('arch', arch) != arch:
        why = 'for %s only' % d['arch']
    tmo = int(d.get('timeout') or 0)
    print('%s\t%s\t%d\t%d' % (t, why, tmo, 'excl' in flags))
EOF
}

build_tests() {
	[ $# -gt 0 ] || return 0
	make -k -C "$STATIC" -j"$JOBS" "$@" >"$LOGS/build-static.log" 2>&1
	return 0
}

build_error() {
	make -C "$STATIC" "$1" 2>&1 | grep -m1 -E 'error|Error|No rule' | cut -c1-160
}

# ---- process helpers ----------------------------------------------------------

alive() {
	local line st
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	st=${line##*) }
	st=${st%% *}
	[ "$st" != Z ] && [ "$st" != X ]
}

descendants() {
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

kill_tree() {
	local p
	for p in $(descendants "$1") "$1"; do
		kill -9 "$p" 2>/dev/null
	done
}

# wait_for SECONDS COMMAND...: 0 once COMMAND succeeds, 1 when time is up.
wait_for() {
	local n=$(($1 * 20))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	"$@"
}

pidfile_ready() { [ -s "$PIDFILE" ] || ! alive "$TPID"; }
proc_gone() { ! alive "$1"; }
# errors selfckpt has written about the test so far (to its outfile, which holds
# the test's standard error, or to selfckpt-run's log)
ckpt_errors() {
	cat "$LOGS/$NAME.selfckpt.log" "$STATIC/$NAME.out.inprogress" 2>/dev/null |
		grep -c -E '^selfckpt[-a-z]*: (error|fatal)'
}

# an image, a dead test, or a new error from selfckpt (a checkpoint given up)
image_ready() {
	[ -e "$IMG/latest" ] || ! alive "$TPID" || [ "$(ckpt_errors)" -gt "$ERRS0" ]
}

# restored_ready: selfckpt-restore ended, or it or one of its descendants has
# the test's saved command line (set once the process is back).
restored_ready() {
	local p a
	alive "$RPID" || return 0
	for p in "$RPID" $(descendants "$RPID"); do
		a=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
		[ "${a%% *}" = "./$NAME" ] && return 0
	done
	return 1
}

# status_words STATUS: "exit N" or "signal NAME".
status_words() {
	if [ "$1" -gt 128 ]; then
		echo "signal $(kill -l $(($1 - 128)) 2>/dev/null || echo $(($1 - 128)))"
	else
		echo "exit $1"
	fi
}

# the first line saying why a test failed, from its outfile (zdtm's FAIL/ERR lines)
test_words() {
	local f=$1 w
	w=$(grep -m1 -E ' (FAIL|ERR): ' "$f" 2>/dev/null | sed -E 's/^[0-9:.]+: +[0-9]+: //')
	[ -n "$w" ] || w=$(grep -v '^selfckpt' "$f" 2>/dev/null | tail -n1 | sed -E 's/^[0-9:.]+: +[0-9]+: //')
	echo "$w" | cut -c1-200
}

# the first message selfckpt wrote about this test (errors before warnings)
selfckpt_words() {
	local w
	w=$(cat "$@" 2>/dev/null | grep -m1 -E '^selfckpt[-a-z]*: (error|fatal)')
	[ -n "$w" ] || w=$(cat "$@" 2>/dev/null | grep -m1 -E '^selfckpt[-a-z]*: ' |
		grep -v "changed since the checkpoint")
	echo "$w" | cut -c1-200
}

# the test's outfile: final once it has exited, in progress before
outfile() {
	if [ -f "$STATIC/$NAME.out" ]; then
		echo "$STATIC/$NAME.out"
	else
		echo "$STATIC/$NAME.out.inprogress"
	fi
}

outfile_pass() {
	[ -f "$1" ] && tail -n1 "$1" | tr -s ' \t' '\n\n' | grep -qx PASS
}

clean_test_files() {
	(cd "$STATIC" && rm -rf "$NAME.pid" "$NAME".pid.* "$NAME.out" "$NAME".out.* \
		"$NAME.test" "$NAME".test.* "$NAME".*.test "$NAME".*.test.* "$NAME.state" \
		"chew_$NAME.test"* *_"$NAME".test*) 2>/dev/null
}

# test_cmd: CMD becomes the command of the test's NAME.pid rule in
# static/Makefile (its own options), with the pid file's path made absolute.
test_cmd() {
	local line a
	line=$(make -s -n --no-print-directory -C "$STATIC" "$NAME.pid" 2>/dev/null |
		awk -v c="./$NAME" '$1 == c { print; exit }')
	[ -n "$line" ] || return 1
	CMD=()
	for a in $line; do
		case "$a" in
		--pidfile=*) CMD+=("--pidfile=$STATIC/${a#--pidfile=}") ;;
		*) CMD+=("$a") ;;
		esac
	done
}

# start_test MODE: starts the test (natively or under selfckpt-run) in the
# background; TPID is the test's pid (selfckpt-run executes the program).
start_test() {
	local pre=()
	[ "$1" = selfckpt ] && pre=("$RUN" --dir "$IMG" --signal "$SIG_SOON" --signal-now "$SIG_NOW" --)
	(cd "$STATIC" && exec env "${TEST_ENV[@]}" "${pre[@]}" "${CMD[@]}") \
		</dev/null >"$LOGS/$NAME.$1.log" 2>&1 9>&- &
	TPID=$!
}

stop_and_wait() {
	kill -TERM "$1" 2>/dev/null
	wait_for "$T" proc_gone "$1"
}

# ---- one test -------------------------------------------------------------------

result() { printf '%s\t%s\t%s\t%s\n' "$NAME" "$1" "$2" "$3" >"$RES/$NAME"; }

run_native() {
	local kids kidpids st
	clean_test_files
	PIDFILE=$STATIC/$NAME.pid
	start_test native
	if ! wait_for "$T" pidfile_ready || ! [ -s "$PIDFILE" ]; then
		if alive "$TPID"; then
			kill_tree "$TPID"
			wait "$TPID" 2>/dev/null
			NATIVE=HANG
			WHY="no pid file after ${T}s"
		else
			wait "$TPID"
			st=$?
			NATIVE=NOSTART
			WHY="ended before it was ready ($(status_words $st)): $(test_words "$(outfile)")"
		fi
		return
	fi
	kidpids=$(descendants "$TPID")
	kids=$(echo $kidpids | wc -w)
	if ! stop_and_wait "$TPID"; then
		kill_tree "$TPID"
		wait "$TPID" 2>/dev/null
		[ -n "$kidpids" ] && kill -9 $kidpids 2>/dev/null
		NATIVE=HANG
		WHY="still running ${T}s after SIGTERM"
		return
	fi
	wait "$TPID"
	st=$?
	[ -n "$kidpids" ] && kill -9 $kidpids 2>/dev/null
	if outfile_pass "$STATIC/$NAME.out"; then
		NATIVE=PASS
		WHY=
	else
		NATIVE=FAIL
		WHY=$(test_words "$STATIC/$NAME.out")
		[ -n "$WHY" ] || WHY="no outfile ($(status_words $st))"
	fi
	[ "$kids" -gt 0 ] && echo "$kids" >"$RES/$NAME.tree"
}

run_selfckpt() {
	local st out=$STATIC/$NAME.out img
	clean_test_files
	IMG=$IMGS/$NAME
	rm -rf "$IMG"
	mkdir -p "$IMG"
	[ "$AS_ROOT" = 1 ] && chown 18943:58467 "$IMG"
	PIDFILE=$STATIC/$NAME.pid
	start_test selfckpt
	if ! wait_for "$T" pidfile_ready || ! [ -s "$PIDFILE" ]; then
		alive "$TPID" && kill_tree "$TPID"
		wait "$TPID"
		st=$?
		CKPT=NOSTART
		WHY="not ready under selfckpt-run ($(status_words $st)): $(selfckpt_words "$LOGS/$NAME.selfckpt.log" "$out.inprogress")"
		return
	fi
	ERRS0=$(ckpt_errors)
	kill -s "$SIG_NOW" "$TPID"
	wait_for "$T" image_ready
	# a message may come before the image: give the checkpoint a moment more
	[ -e "$IMG/latest" ] || ! alive "$TPID" || wait_for 1 test -e "$IMG/latest"
	if ! [ -e "$IMG/latest" ]; then
		if alive "$TPID"; then
			kill_tree "$TPID"
			wait "$TPID" 2>/dev/null
			CKPT=NOIMAGE
			WHY="no image: $(selfckpt_words "$LOGS/$NAME.selfckpt.log" "$out.inprogress")"
			[ "$(ckpt_errors)" -gt "$ERRS0" ] || WHY="no image after ${T}s: ${WHY#no image: }"
			[ "${WHY%: }" != "$WHY" ] && WHY="${WHY}no message from selfckpt"
		else
			wait "$TPID"
			st=$?
			CKPT=CKPTCRASH
			WHY="died at the checkpoint ($(status_words $st)): $(selfckpt_words "$LOGS/$NAME.selfckpt.log" "$out.inprogress")"
		fi
		return
	fi
	kill_tree "$TPID"
	wait "$TPID" 2>/dev/null
	cp "$out.inprogress" "$LOGS/$NAME.checkpoint.out" 2>/dev/null

	img=$(readlink -f "$IMG/latest")
	(cd "$STATIC" && exec "${RESTORE_AS[@]}" "$RESTORE" "$img") \
		</dev/null >"$LOGS/$NAME.restore.log" 2>&1 9>&- &
	RPID=$!
	if ! wait_for "$T" restored_ready; then
		kill_tree "$RPID"
		wait "$RPID" 2>/dev/null
		CKPT=HANG
		WHY="restore not done after ${T}s: $(selfckpt_words "$LOGS/$NAME.restore.log" "$out.inprogress")"
		return
	fi
	if alive "$RPID"; then
		sleep 0.2
		if ! stop_and_wait "$RPID"; then
			kill_tree "$RPID"
			wait "$RPID" 2>/dev/null
			CKPT=HANG
			WHY="restored, still running ${T}s after SIGTERM"
			return
		fi
		wait "$RPID"
		st=$?
		if outfile_pass "$out"; then
			CKPT=PASS
			WHY=
		elif [ -f "$out" ]; then
			CKPT=FAIL
			WHY=$(test_words "$out")
		elif [ "$st" -gt 128 ]; then
			CKPT=CRASH
			WHY="restored process died ($(status_words $st)): $(test_words "$out.inprogress")"
		else
			CKPT=FAIL
			WHY="no outfile ($(status_words $st)): $(test_words "$out.inprogress")"
		fi
	else
		wait "$RPID"
		st=$?
		if [ -f "$out" ]; then
			# it ended on its own before SIGTERM
			CKPT=FAIL
			WHY="ended before SIGTERM ($(status_words $st)): $(test_words "$out")"
		elif [ "$st" -gt 128 ]; then
			CKPT=CRASH
			WHY="restore died ($(status_words $st)): $(selfckpt_words "$LOGS/$NAME.restore.log" "$out.inprogress")"
		else
			CKPT=REFUSED
			WHY="restore refused ($(status_words $st)): $(selfckpt_words "$LOGS/$NAME.restore.log" "$out.inprogress")"
		fi
	fi
	cp "$(outfile)" "$LOGS/$NAME.selfckpt.out" 2>/dev/null
	# the first thing selfckpt said about it, when the test failed
	if [ "$CKPT" != PASS ]; then
		local s
		s=$(selfckpt_words "$LOGS/$NAME.checkpoint.out" "$LOGS/$NAME.selfckpt.log" \
			"$LOGS/$NAME.selfckpt.out" "$LOGS/$NAME.restore.log")
		[ -n "$s" ] && [ "${WHY#*"$s"}" = "$WHY" ] && WHY="$WHY | $s"
	fi
}

# The System V objects on the host now, one "KIND ID" a line (m, s, q: ipcrm's options).
sysv_ids() {
	ipcs -m | awk '$2 ~ /^[0-9]+$/ { print "m", $2 }'
	ipcs -s | awk '$2 ~ /^[0-9]+$/ { print "s", $2 }'
	ipcs -q | awk '$2 ~ /^[0-9]+$/ { print "q", $2 }'
}

# Remove the objects made since the list $1 (sysv_ids) was taken: those that a
# run killed with -9 (the checkpointed one) leaves behind, which would make the
# next run's IPC_EXCL fail. Only SysV tests make them, one at a time.
remove_new_sysv() {
	[ -f "$1" ] || return 0
	sysv_ids | grep -vxF -f "$1" | while read -r kind id; do
		ipcrm "-$kind" "$id" 2>/dev/null
	done
	return 0
}

run_one() {
	NAME=$1
	T=$2
	TPID=0
	RPID=0
	NATIVE=-
	CKPT=-
	WHY=
	trap '[ "$TPID" -gt 0 ] && kill_tree "$TPID"; [ "$RPID" -gt 0 ] && kill_tree "$RPID"; exit 1' TERM INT
	if [ -x "$STATIC/$NAME.checkskip" ] &&
		! (cd "$STATIC" && timeout "$T" "./$NAME.checkskip") >"$LOGS/$NAME.checkskip.log" 2>&1; then
		result SKIP - "its .checkskip fails on this machine"
		return
	fi
	if ! test_cmd; then
		result SKIP - "no command in the $NAME.pid rule of static/Makefile"
		return
	fi
	needs_lock "$NAME" && sysv_ids >"$LOGS/$NAME.sysv-before"
	run_native
	remove_new_sysv "$LOGS/$NAME.sysv-before"
	cp "$(outfile)" "$LOGS/$NAME.native.out" 2>/dev/null
	if [ "$NATIVE" != PASS ]; then
		result "$NATIVE" - "fails natively: $WHY"
		clean_test_files
		return
	fi
	run_selfckpt
	remove_new_sysv "$LOGS/$NAME.sysv-before"
	cp "$(outfile)" "$LOGS/$NAME.selfckpt.out" 2>/dev/null
	[ "$KEEP_IMAGES" = 1 ] || rm -rf "$IMG"
	result PASS "$CKPT" "$WHY"
	clean_test_files
}

# Tests that bind fixed inet ports or use SysV IPC keys run one at a time.
needs_lock() {
	grep -qE 'sin6?_port|shmget|semget|msgget' "$STATIC/$1.c" 2>/dev/null
}

run_locked() {
	if needs_lock "$1"; then
		(
			flock 9
			run_one "$@"
		) 9>"$WORK/serial.lock"
	else
		run_one "$@"
	fi
}

# ---- main --------------------------------------------------------------------

# zdtm.py starts a test with descriptors 0-2 only: leave none of ours open to it
# (255 is the one bash reads this script from, close-on-exec).
for fd in /proc/$$/fd/*; do
	fd=${fd##*/}
	[ "$fd" -gt 2 ] && [ "$fd" -lt 255 ] && eval "exec $fd>&-" 2>/dev/null
done

copy_zdtm
[ "$AS_ROOT" = 1 ] && chmod a+w "$STATIC" "$IMGS"
build_lib
if [ $# -gt 0 ]; then
	TESTS=("$@")
else
	read -r -a TESTS <<<"$(all_tests)"
fi
[ ${#TESTS[@]} -gt 0 ] || die 69 "no static tests found in '$STATIC/Makefile'"

declare -A SKIP TMO EXCL
while IFS=$'\t' read -r n why tmo excl; do
	SKIP[$n]=$why
	TMO[$n]=$tmo
	EXCL[$n]=$excl
done < <(desc_info "${TESTS[@]}")

TOBUILD=()
for n in "${TESTS[@]}"; do
	[ "${SKIP[$n]:--}" = - ] && TOBUILD+=("$n")
done
echo "building ${#TOBUILD[@]} tests in $STATIC" >&2
build_tests "${TOBUILD[@]}"
for n in "${TOBUILD[@]}"; do
	[ -x "$STATIC/$n" ] || SKIP[$n]="does not build here: $(build_error "$n")"
done

trap 'kill $(jobs -p) 2>/dev/null; wait; exit 1' INT TERM

launch() {
	local t=$TIMEOUT
	[ "${TMO[$1]:-0}" -gt "$t" ] && t=${TMO[$1]}
	echo "run $1" >&2
	run_locked "$1" "$t" &
}

LATER=()
for n in "${TESTS[@]}"; do
	if [ "${SKIP[$n]:--}" != - ]; then
		NAME=$n
		result SKIP - "${SKIP[$n]}"
		continue
	fi
	if [ "${EXCL[$n]:-0}" = 1 ]; then
		LATER+=("$n")
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
		wait -n
	done
	launch "$n"
done
wait
for n in "${LATER[@]}"; do
	launch "$n"
	wait
done

fit=0
pass=0
trees=0
tree_pass=0
declare -A COUNT
for n in "${TESTS[@]}"; do
	if ! IFS=$'\t' read -r name native ckpt why <"$RES/$n"; then
		native=LOST ckpt=- why="no result written"
	fi
	printf '%-28s %-8s %-9s %s\n' "$n" "$native" "$ckpt" "$why"
	if [ "$native" = PASS ]; then
		fit=$((fit + 1))
		[ "$ckpt" = PASS ] && pass=$((pass + 1))
		if [ -f "$RES/$n.tree" ]; then
			trees=$((trees + 1))
			[ "$ckpt" = PASS ] && tree_pass=$((tree_pass + 1))
		fi
		COUNT[$ckpt]=$((${COUNT[$ckpt]:-0} + 1))
	else
		COUNT[native-$native]=$((${COUNT[native-$native]:-0} + 1))
	fi
done
detail=
for k in $(printf '%s\n' "${!COUNT[@]}" | sort); do
	detail="$detail $k=${COUNT[$k]}"
done
echo "summary: ${#TESTS[@]} tests; $fit fit (pass natively, unprivileged; $trees of them" \
	"with child processes); $pass of $fit pass under selfckpt ($tree_pass of the $trees" \
	"process trees);$detail"
exit 0
