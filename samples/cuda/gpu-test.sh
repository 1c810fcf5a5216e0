#!/bin/sh
# gpu-test.sh - the CUDA samples checkpointed and restored in every way selfckpt
# offers; each restored run must print what an uninterrupted run prints.
#
#   sh samples/cuda/gpu-test.sh BUILD [--soft]
#
# For each sample (matmul twice: module from its file, and --embedded, the
# latter on a GPU only), these cases (loader, a GPU process with two forked
# CPU workers, is a job of three processes: the signal cases only, since
# selfckpt_save() saves one process, and no chain, since a job's images are full):
#   ref            an uninterrupted run: the reference output
#   native         the -native build (the driver's libcuda, no selfckpt) prints
#                  the same
#   save-at        selfckpt_save() after iteration K: the run goes on and prints
#                  the reference
#   restore-1, -2  that image restored twice: each prints the reference's
#                  lines after iteration K
#   sigusr1, -2    the -native build, which knows nothing of selfckpt, run under
#                  selfckpt-run, checkpointed by the signal, killed with -9 and
#                  restored: it prints the reference from where it was saved
#   again          the SIGUSR2 image restored; the restored process, which kept
#                  selfckpt-run's triggers, is checkpointed by SIGUSR2 and runs
#                  to its end
#   restore-again  that second image restored
#   chain          the -native build under selfckpt-run with SELFCKPT_INCREMENTAL,
#                  checkpointed by SIGUSR2 twice, killed with -9; the second image,
#                  incremental (device memory the GPU finds unchanged is left to
#                  the first), restored: it prints the reference from where it was
#                  saved. The pieces of device memory it left are counted in the
#                  log line of the case
#   other-gpu      where the GPU has a sibling (two GPUs or more listed by
#                  nvidia-smi, CUDA_VISIBLE_DEVICES unset): the save-at image,
#                  made on the first GPU, restored with CUDA_VISIBLE_DEVICES=1,
#                  so that the new GPU proxy sees only the second one
#
# --soft runs on the software CUDA device (tests/softcuda): the GPU proxy loads
# BUILD/tests/libsoftcuda.so.1, the samples load BUILD/tests/softmods/*.softmod,
# and the -native builds find it as libcuda.so.1.
#
# Environment: GPU_TEST_ITERS (50), GPU_TEST_SLEEP_MS (40), GPU_TEST_TIMEOUT
# (seconds any one wait may take, 60), GPU_TEST_SAMPLES (which samples).
# Exit status: 0 when every case passed, 1 otherwise, 2 when something to test
# is missing, 64 on a usage error.
set -u

usage() {
	echo "usage: sh samples/cuda/gpu-test.sh BUILD [--soft]" >&2
	exit 64
}

{ [ $# -ge 1 ] && [ $# -le 2 ]; } || usage
build=$(cd "$1" 2> /dev/null && pwd) || { echo "gpu-test: no build directory '$1'" >&2; exit 2; }
soft=0
case ${2:-} in
--soft) soft=1 ;;
"") ;;
*) usage ;;
esac

bin=$build/samples/cuda
run=$build/bin/selfckpt-run
restore=$build/bin/selfckpt-restore
iters=${GPU_TEST_ITERS:-50}
sleep_ms=${GPU_TEST_SLEEP_MS:-40}
limit=${GPU_TEST_TIMEOUT:-60}
save_at=$((iters * 2 / 5))
signal_after=5 # iterations before a signal; one more is needed after a restore
if [ $soft = 1 ]; then
	samples=${GPU_TEST_SAMPLES:-vecadd matmul texrotate solver loader vmm graph peer managed resumable}
else
	samples=${GPU_TEST_SAMPLES:-vecadd matmul matmul-embedded texrotate solver loader vmm graph peer managed resumable}
fi
gpus=1
if [ $soft = 0 ] && [ -z "${CUDA_VISIBLE_DEVICES+set}" ]; then
	gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
fi
if [ "$save_at" -lt 1 ] || [ "$iters" -lt $((signal_after * 3)) ]; then
	echo "gpu-test: GPU_TEST_ITERS=$iters is too few for the cases" >&2
	exit 64
fi

# Every background process runs in a session of its own (setsid does not fork
# here: a background child is no group leader), so that it and whatever it
# started, the GPU proxy included, can be killed together.
setsid=
command -v setsid > /dev/null 2>&1 && setsid=setsid

tmp=$(mktemp -d /tmp/sc-gpu-test-XXXXXX) || exit 1
live= # background processes not yet waited for
cleanup() {
	for p in $live; do
		stop "$p"
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 141' PIPE # output cut short: still clean up
trap 'exit 143' TERM

missing=
for f in "$run" "$restore"; do
	[ -x "$f" ] || missing="$missing $f"
done
for s in $samples; do
	p=${s%-embedded}
	case " $samples " in
	*" $p "*) [ "$s" = "$p" ] || continue ;; # checked as $p
	esac
	[ -x "$bin/$p" ] || missing="$missing $bin/$p"
	[ -x "$bin/$p-native" ] || missing="$missing $bin/$p-native"
	[ $soft = 0 ] || [ -r "$build/tests/softmods/$p.softmod" ] ||
		missing="$missing $build/tests/softmods/$p.softmod"
done
if [ $soft = 1 ]; then
	export SELFCKPT_LIBCUDA="$build/tests/libsoftcuda.so.1"
	[ -r "$SELFCKPT_LIBCUDA" ] || missing="$missing $SELFCKPT_LIBCUDA"
	mkdir "$tmp/lib" && ln -s "$SELFCKPT_LIBCUDA" "$tmp/lib/libcuda.so.1" || exit 1
	export LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -n "$missing" ]; then
	echo "gpu-test: missing (make cuda-samples$([ $soft = 1 ] && echo ' cuda-soft-samples')):" \
		"${missing# }" >&2
	exit 2
fi

# --- processes ---------------------------------------------------------------

now() {
	date +%s
}

# alive PID: PID runs and is not a zombie
alive() {
	[ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2> /dev/null
}

# stop PID: kill -9 PID and all it started
stop() {
	if [ -n "$setsid" ]; then
		kill -9 -- "-$1" 2> /dev/null
	else
		kill -9 "$1" 2> /dev/null
	fi
}

# start OUT ERR CMD...: CMD in the background, its pid in $bg
start() {
	out=$1 err=$2
	shift 2
	$setsid "$@" < /dev/null > "$out" 2> "$err" &
	bg=$!
	live="$live $bg"
}

# reap PID: wait for a process already ended or stopped; its status in $?
reap() {
	live=$(echo "$live" | sed "s/ $1\b//")
	wait "$1" 2> /dev/null
}

# finish PID: wait for PID to end (kill it after $limit s); its status, 124 if killed
finish() {
	deadline=$(($(now) + limit))
	while alive "$1"; do
		if [ "$(now)" -ge "$deadline" ]; then
			stop "$1"
			reap "$1"
			return 124
		fi
		sleep 0.05
	done
	reap "$1"
}

# wait_lines FILE N PID: until FILE holds N "iter" lines; fails if PID ends or time is up
wait_lines() {
	deadline=$(($(now) + limit))
	until [ "$(grep -c '^iter ' "$1")" -ge "$2" ]; do
		if ! alive "$3"; then
			[ "$(grep -c '^iter ' "$1")" -ge "$2" ]
			return
		fi
		[ "$(now)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# wait_image FILE PID: until FILE (a link to the image) exists; fails if PID ends or time is up
wait_image() {
	deadline=$(($(now) + limit))
	until [ -e "$1" ]; do
		if ! alive "$2"; then
			sleep 0.2 # the image may be renamed into place as the process exits
			[ -e "$1" ]
			return
		fi
		[ "$(now)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# ended STATUS: how a command with a time limit ended
ended() {
	case $1 in
	124 | 137) echo "timed out after $limit s" ;;
	*) echo "exited with $1" ;;
	esac
}

# --- results -----------------------------------------------------------------

passed=0 failed=0

pass() {
	printf '%-16s %-14s PASS\n' "$entry" "$1" >> "$tmp/results"
	passed=$((passed + 1))
}

# fail CASE MESSAGE [LOG]: say why at once, with the end of LOG
fail() {
	printf '%-16s %-14s FAIL\n' "$entry" "$1" >> "$tmp/results"
	failed=$((failed + 1))
	echo "gpu-test: $entry, $1: $2" >&2
	if [ -n "${3:-}" ] && [ -s "$3" ]; then
		tail -n 15 "$3" | sed 's/^/    | /' >&2
	fi
	return 1
}

# iter_of FILE: the iteration of FILE's first line (a "done" line: one past the last)
iter_of() {
	word='' num=''
	read -r word num _ < "$1" 2> /dev/null
	case $word in
	iter) echo "$num" ;;
	done) echo $((iters + 1)) ;;
	*) echo 0 ;;
	esac
}

# is_tail FILE: FILE is the reference from FILE's first line to its end
is_tail() {
	n=$(iter_of "$1")
	[ "$n" -ge 1 ] && tail -n "+$n" "$ref" | cmp -s - "$1"
}

# is_prefix FILE: FILE is the beginning of the reference
is_prefix() {
	head -n "$(wc -l < "$1")" "$ref" | cmp -s - "$1"
}

# diff_note FILE [FROM]: a file that says where FILE first departs from the
# reference (from its line FROM on), for fail() to show
diff_note() {
	from=${2:-1}
	tail -n "+$from" "$ref" > "$1.expected"
	msg=$(cmp "$1.expected" "$1" 2>&1)
	l=$(echo "$msg" | sed -n 's/.* line \([0-9][0-9]*\).*/\1/p')
	l=${l:-0}
	case $msg in
	*EOF*) l=$((l + 1)) ;; # the line after the shorter file's last
	esac
	{
		echo "first difference at reference line $((l + from - 1)):"
		echo "expected: $(sed -n "${l}p" "$1.expected")"
		echo "got:      $(sed -n "${l}p" "$1")"
	} > "$1.diff"
	echo "$1.diff"
}

# --- the cases ---------------------------------------------------------------
# Each takes the sample's options as its arguments; $w is the sample's folder.

case_ref() {
	ref=$w/ref.out
	timeout -k 5 "$limit" "$bin/$prog" "$@" < /dev/null > "$ref" 2> "$w/ref.err"
	status=$?
	[ $status -eq 0 ] || { fail ref "$(ended $status)" "$w/ref.err"; return 1; }
	if [ "$(grep -c '^iter ' "$ref")" -ne "$iters" ] || ! tail -n 1 "$ref" | grep -q '^done '
	then
		fail ref "not $iters iter lines and a done line" "$ref"
		return 1
	fi
	if [ "$entry" != "$prog" ] && [ -s "$tmp/$prog/ref.out" ] &&
		! cmp -s "$ref" "$tmp/$prog/ref.out"; then
		fail ref "differs from $prog's with the module from its file" \
			"$(diff_note "$tmp/$prog/ref.out")"
		return 1
	fi
	pass ref
}

case_native() {
	timeout -k 5 "$limit" "$bin/$prog-native" "$@" < /dev/null > "$w/native.out" \
		2> "$w/native.err"
	status=$?
	[ $status -eq 0 ] || { fail native "$(ended $status)" "$w/native.err"; return; }
	if ! cmp -s "$w/native.out" "$ref"; then
		fail native "output differs from the reference" "$(diff_note "$w/native.out")"
		return
	fi
	pass native
}

case_save_at() {
	rm -f "$w/save.img"
	timeout -k 5 "$limit" "$bin/$prog" "$@" --save-at "$save_at" "$w/save.img" \
		< /dev/null > "$w/save.out" 2> "$w/save.err"
	status=$?
	[ $status -eq 0 ] || { fail save-at "$(ended $status)" "$w/save.err"; return; }
	grep -qx saved "$w/save.err" ||
		{ fail save-at "no 'saved' on stderr" "$w/save.err"; return; }
	[ -s "$w/save.img" ] || { fail save-at "no image $w/save.img"; return; }
	if ! cmp -s "$w/save.out" "$ref"; then
		fail save-at "output differs from the reference" "$(diff_note "$w/save.out")"
		return
	fi
	pass save-at
}

# restore_saved NAME: the --save-at image restored, in the foreground
restore_saved() {
	out=$w/$1.out err=$w/$1.err
	[ -s "$w/save.img" ] || { fail "$1" "no image: save-at failed"; return; }
	timeout -k 5 "$limit" "$restore" "$w/save.img" < /dev/null > "$out" 2> "$err"
	status=$?
	[ $status -eq 0 ] || { fail "$1" "selfckpt-restore $(ended $status)" "$err"; return; }
	grep -qx restored "$err" || { fail "$1" "no 'restored' on stderr" "$err"; return; }
	tail -n "+$((save_at + 1))" "$ref" | cmp -s - "$out" ||
		{ fail "$1" "output differs from the reference after iteration $save_at" \
			"$(diff_note "$out" $((save_at + 1)))"; return; }
	pass "$1"
}

# case_other_gpu: the --save-at image restored on the second GPU, when there is one
# (not peer's: it uses every GPU there is, and a restart needs as many)
case_other_gpu() {
	[ "$gpus" -ge 2 ] && [ "$prog" != peer ] || return 0
	CUDA_VISIBLE_DEVICES=1
	export CUDA_VISIBLE_DEVICES
	restore_saved other-gpu
	unset CUDA_VISIBLE_DEVICES
}

# check_restored CASE OUT ERR STATUS LOW HIGH: a restored run ended well and
# printed the reference from an iteration in LOW..HIGH on
check_restored() {
	[ "$4" -eq 0 ] || { fail "$1" "the restored process $(ended "$4")" "$3"; return; }
	n=$(iter_of "$2")
	if [ "$n" -lt "$5" ] || [ "$n" -gt "$6" ]; then
		fail "$1" "the restored run starts at iteration $n, not in $5..$6" "$2"
		return
	fi
	is_tail "$2" ||
		{ fail "$1" "output differs from the reference from iteration $n" \
			"$(diff_note "$2" "$n")"; return; }
	pass "$1"
}

# case_signal SIG: under selfckpt-run, checkpointed by SIG, killed, restored
case_signal() {
	sig=$1 name=sig$(echo "$1" | tr '[:upper:]' '[:lower:]')
	d=$w/$1
	shift
	mkdir -p "$d"
	start "$d/run.out" "$d/run.err" "$run" --dir "$d" -- "$bin/$prog-native" "$@"
	if ! wait_lines "$d/run.out" "$signal_after" "$bg"; then
		stop "$bg"
		reap "$bg"
		fail "$name" "fewer than $signal_after iterations in $limit s" "$d/run.err"
		return
	fi
	kill "-$sig" "$bg"
	if ! wait_image "$d/latest" "$bg"; then
		stop "$bg"
		reap "$bg"
		fail "$name" "no image in $d after SIG$sig" "$d/run.err"
		return
	fi
	stop "$bg"
	reap "$bg"
	if ! is_prefix "$d/run.out"; then
		fail "$name" "the run printed other lines before the checkpoint" \
			"$(diff_note "$d/run.out")"
		return
	fi
	timeout -k 5 "$limit" "$restore" "$d/latest" < /dev/null > "$d/restored.out" \
		2> "$d/restored.err"
	check_restored "$name" "$d/restored.out" "$d/restored.err" $? \
		$((signal_after + 1)) $(($(wc -l < "$d/run.out") + 1))
}

# The SIGUSR2 image restored and checkpointed again; then that image restored.
case_again() {
	d=$w/USR2
	if [ ! -e "$d/latest" ]; then
		fail again "no image: sigusr2 failed"
		fail restore-again "no image"
		return
	fi
	img=$(readlink "$d/latest")
	case $img in
	/*) ;;
	*) img=$d/$img ;; # latest names the image in its folder
	esac
	rm -f "$d/latest"
	start "$d/again.out" "$d/again.err" "$restore" "$img"
	if ! wait_lines "$d/again.out" 3 "$bg"; then
		stop "$bg"
		reap "$bg"
		fail again "the restored run printed too little" "$d/again.err"
		fail restore-again "no image"
		return
	fi
	kill -USR2 "$bg"
	got=0
	wait_image "$d/latest" "$bg" && got=1
	finish "$bg"
	status=$?
	if [ $got = 0 ]; then
		fail again "no image in $d after SIGUSR2" "$d/again.err"
		fail restore-again "no image"
		return
	fi
	check_restored again "$d/again.out" "$d/again.err" $status $((signal_after + 1)) "$iters"
	first=$(iter_of "$d/again.out")
	timeout -k 5 "$limit" "$restore" "$d/latest" < /dev/null > "$d/again2.out" \
		2> "$d/again2.err"
	check_restored restore-again "$d/again2.out" "$d/again2.err" $? $((first + 3)) \
		$((iters + 1))
}

# sigusr2_image DIR PID: SIGUSR2 to PID, then the image DIR/latest names; fails with no image
sigusr2_image() {
	rm -f "$1/latest"
	kill -USR2 "$2"
	wait_image "$1/latest" "$2" || return 1
	img=$(readlink "$1/latest")
	case $img in
	/*) ;;
	*) img=$1/$img ;; # latest names the image in its folder
	esac
}

# Two checkpoints by SIGUSR2 with SELFCKPT_INCREMENTAL: the second is incremental, and restores.
case_chain() {
	d=$w/chain
	mkdir -p "$d"
	start "$d/run.out" "$d/run.err" env SELFCKPT_INCREMENTAL=4 "$run" --dir "$d" -- \
		"$bin/$prog-native" "$@"
	first= second=
	if wait_lines "$d/run.out" "$signal_after" "$bg" && sigusr2_image "$d" "$bg"; then
		first=$img
		wait_lines "$d/run.out" $(($(wc -l < "$d/run.out") + 2)) "$bg" &&
			sigusr2_image "$d" "$bg" && second=$img
	fi
	stop "$bg"
	reap "$bg"
	if [ -z "$second" ] || [ "$second" = "$first" ]; then
		fail chain "not two images after two SIGUSR2" "$d/run.err"
		return
	fi
	"$build/bin/selfckpt-inspect" --json "$second" > "$d/inspect.json" 2> "$d/inspect.err"
	if ! grep -q '"format_minor": 7,' "$d/inspect.json"; then
		fail chain "the second image is not incremental" "$d/run.err"
		return
	fi
	left=$(sed -n 's/.*"parent_pieces": \([0-9]*\).*/\1/p' "$d/inspect.json")
	echo "gpu-test: $entry, chain: ${left:-0} pieces of device memory left to the first image"
	if ! is_prefix "$d/run.out"; then
		fail chain "the run printed other lines before the checkpoints" \
			"$(diff_note "$d/run.out")"
		return
	fi
	timeout -k 5 "$limit" "$restore" "$second" < /dev/null > "$d/restored.out" \
		2> "$d/restored.err"
	check_restored chain "$d/restored.out" "$d/restored.err" $? $((signal_after + 3)) \
		$(($(wc -l < "$d/run.out") + 1))
}

# --- main --------------------------------------------------------------------

mode=GPU
[ $soft = 1 ] && mode="software device ($SELFCKPT_LIBCUDA)"
echo "gpu-test: $samples on the $mode: $iters iterations, $sleep_ms ms apart," \
	"saved after $save_at"
[ "$gpus" -ge 2 ] || echo "gpu-test: one GPU visible: no other-gpu case"
for entry in $samples; do
	prog=${entry%-embedded}
	w=$tmp/$entry
	mkdir -p "$w"
	set -- --iters "$iters" --sleep-ms "$sleep_ms"
	[ "$entry" != "$prog" ] && set -- "$@" --embedded
	[ $soft = 1 ] && set -- "$@" --module "$build/tests/softmods/$prog.softmod"
	echo "gpu-test: $entry"
	if ! case_ref "$@"; then
		for c in native save-at restore-1 restore-2 sigusr1 sigusr2 again restore-again \
			chain; do
			fail "$c" "no reference output"
		done 2> /dev/null
		continue
	fi
	case_native "$@"
	if [ "$prog" != loader ]; then
		case_save_at "$@"
		restore_saved restore-1
		restore_saved restore-2
		case_other_gpu
	fi
	case_signal USR1 "$@"
	case_signal USR2 "$@"
	case_again
	[ "$prog" = loader ] || case_chain "$@" # a job's images are full
done

echo
printf '%-16s %-14s %s\n' sample case result
cat "$tmp/results"
echo "gpu-test: $passed passed, $failed failed"
[ $failed -eq 0 ]
