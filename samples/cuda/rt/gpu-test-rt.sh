#!/bin/sh
# gpu-test-rt.sh - the Runtime API samples (samples/cuda/rt/, nvcc's default
# static cudart and -cudart shared) in the driver-assisted mode: the driver
# runs in the program, and selfckpt checkpoints it with the driver's process
# checkpoint. Each restored run must print what an uninterrupted run prints.
#
#   sh samples/cuda/rt/gpu-test-rt.sh BUILD
#
# For rtloop, rtloop-shared and rtloop-mt (rtloop with four threads that each
# use the GPU every iteration), and rtmixed and rtmixed-shared (the Driver API
# loads the module, launches the kernels and owns a buffer, on the Runtime
# API's memory and streams), under selfckpt-run (the rtmixed ones with
# --cuda=driver, so that their Driver API calls reach the driver, not
# selfckpt's GPU proxy):
#   ref          an uninterrupted run, without selfckpt: the reference
#   save-at      selfckpt_save() after iteration K: the run goes on, prints the reference
#   inspect      selfckpt-inspect says that image is of the driver-assisted mode
#   restore-1,-2 that image restored twice: the reference after iteration K
#   sigusr1,-2   checkpointed by the signal, killed with -9, restored
#   again        the SIGUSR2 image restored, checkpointed by SIGUSR2 again, run to its end
#   restore-again that second image restored
#   new-ids      the save-at image restored with new ids (SELFCKPT_NEW_IDS=1): the
#                driver restores only into the same process id, so the restart
#                must stop with exit 69 and say so, not hang or crash
#   other-gpu    where nvidia-smi lists two GPUs or more and CUDA_VISIBLE_DEVICES
#                is unset: saved at iteration K with CUDA_VISIBLE_DEVICES=0,
#                restored with CUDA_VISIBLE_DEVICES=1; the driver must be told
#                that the second GPU takes the first one's place (gpu-pairs)
#   fewer-gpus   there too: saved seeing both GPUs, restored seeing one: exit 69,
#                saying how many GPUs the restore needs
#
# Environment: GPU_TEST_ITERS (30), GPU_TEST_SLEEP_MS (60), GPU_TEST_TIMEOUT (60),
# GPU_TEST_RT_PROGRAMS (which of the programs above, all by default).
# Exit status: 0 when every case passed, 1 otherwise, 2 when something is missing.
set -u
build=$(cd "${1:?usage: gpu-test-rt.sh BUILD}" 2> /dev/null && pwd) || exit 2
bin=$build/samples/cuda
run=$build/bin/selfckpt-run
restore=$build/bin/selfckpt-restore
iters=${GPU_TEST_ITERS:-30}
sleep_ms=${GPU_TEST_SLEEP_MS:-60}
limit=${GPU_TEST_TIMEOUT:-60}
save_at=$((iters * 2 / 5))
tmp=$(mktemp -d /tmp/sc-gpu-rt-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
for f in "$run" "$restore" "$build/bin/selfckpt-driver-ckpt" "$build/lib/libselfckpt-driver.so.1" \
	"$bin/rtloop" "$bin/rtloop-shared" "$bin/rtmixed" "$bin/rtmixed-shared"; do
	[ -x "$f" ] || { echo "gpu-test-rt: missing $f (make cuda-samples)" >&2; exit 2; }
done
passed=0 failed=0
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')

result() { # CASE PASS|FAIL [WHY [LOG]]
	printf '%-16s %-14s %s\n' "$entry" "$1" "$2" >> "$tmp/results"
	if [ "$2" = PASS ]; then
		passed=$((passed + 1))
		return 0
	fi
	failed=$((failed + 1))
	echo "gpu-test-rt: $entry, $1: $3" >&2
	[ -n "${4:-}" ] && [ -s "$4" ] && tail -n 8 "$4" | sed 's/^/    | /' >&2
	return 1
}

lines() { n=$(grep -c '^iter ' "$1" 2> /dev/null); echo "${n:-0}"; }

wait_until() { # CONDITION...: true within $limit s
	i=0
	until "$@"; do
		[ $i -ge $((limit * 20)) ] && return 1
		sleep 0.05
		i=$((i + 1))
	done
}

has_lines() { [ "$(lines "$1")" -ge "$2" ]; }

# tail_ok OUT: OUT is the reference from OUT's first iteration on
tail_ok() {
	n=$(head -n 1 "$1" | awk '$1 == "iter" {print $2}')
	[ -n "$n" ] && tail -n "+$n" "$ref" | cmp -s - "$1"
}

restored() { # CASE IMAGE [ENV=VALUE]
	c=$1 img=$2
	shift 2
	env "$@" timeout -k 5 "$limit" "$restore" "$img" < /dev/null > "$w/$c.out" 2> "$w/$c.err"
	st=$?
	[ $st -eq 0 ] || { result "$c" FAIL "selfckpt-restore exited with $st" "$w/$c.err"; return; }
	tail_ok "$w/$c.out" && result "$c" PASS ||
		result "$c" FAIL "output differs from the reference" "$w/$c.out"
}

# saved_run IMAGE OUT ERR SLEEP_MS [ENV=VALUE...]: the program under
# selfckpt-run, which saves IMAGE after iteration $save_at; its exit status
saved_run() {
	img=$1 out=$2 err=$3 ms=$4
	shift 4
	env "$@" timeout -k 5 "$limit" "$run" $run_opts --dir "$(dirname "$img")" -- \
		"$bin/$prog" $opts --iters "$iters" --sleep-ms "$ms" --save-at "$save_at" "$img" \
		< /dev/null > "$out" 2> "$err"
}

# refused CASE IMAGE WHY [ENV=VALUE...]: the restore of IMAGE must stop with
# exit 69 and say WHY
refused() {
	c=$1 img=$2 why=$3
	shift 3
	env "$@" timeout -k 5 "$limit" "$restore" "$img" < /dev/null > "$w/$c.out" 2> "$w/$c.err"
	st=$?
	[ $st -eq 69 ] && grep -q "$why" "$w/$c.err" && result "$c" PASS ||
		result "$c" FAIL "exit $st, not 69 with the reason" "$w/$c.err"
}

case_save_at() {
	d=$w/save
	mkdir -p "$d"
	saved_run "$d/save.img" "$d/out" "$d/err" "$sleep_ms"
	st=$?
	[ $st -eq 0 ] && grep -qx saved "$d/err" && cmp -s "$d/out" "$ref" &&
		result save-at PASS ||
		result save-at FAIL "exit $st, or no 'saved', or output differs" "$d/err"
	"$build/bin/selfckpt-inspect" "$d/save.img" > "$d/inspect" 2>&1 &&
		grep -q "^CUDA mode     driver-assisted" "$d/inspect" && result inspect PASS ||
		result inspect FAIL "selfckpt-inspect does not say driver-assisted" "$d/inspect"
	restored restore-1 "$d/save.img"
	restored restore-2 "$d/save.img"
	refused new-ids "$d/save.img" 'only into a process of the same id' SELFCKPT_NEW_IDS=1
}

case_signal() { # SIG
	d=$w/$1
	mkdir -p "$d"
	"$run" $run_opts --dir "$d" -- "$bin/$prog" $opts --iters "$iters" --sleep-ms "$sleep_ms" \
		< /dev/null > "$d/run.out" 2> "$d/run.err" &
	pid=$!
	wait_until has_lines "$d/run.out" 5
	kill "-$1" $pid
	wait_until test -e "$d/latest"
	kill -9 $pid 2> /dev/null
	wait $pid 2> /dev/null
	[ -e "$d/latest" ] || { result "sig$1" FAIL "no image" "$d/run.err"; return; }
	restored "sig$1" "$d/latest"
}

case_other_gpu() {
	d=$w/other
	mkdir -p "$d"
	saved_run "$d/save.img" "$d/out" "$d/err" 0 CUDA_VISIBLE_DEVICES=0 ||
		{ result other-gpu FAIL "the run on GPU 0 failed" "$d/err"; return; }
	if restored other-gpu "$d/save.img" CUDA_VISIBLE_DEVICES=1 SELFCKPT_LOG_LEVEL=debug; then
		grep -q 'GPU GPU-[0-9a-f-]* of process [0-9]*: now GPU-' "$w/other-gpu.err" &&
			result gpu-pairs PASS || result gpu-pairs FAIL \
			"the driver was not told of the other GPU" "$w/other-gpu.err"
	fi
	saved_run "$d/both.img" "$d/both.out" "$d/both.err" 0 ||
		{ result fewer-gpus FAIL "the run on every GPU failed" "$d/both.err"; return; }
	refused fewer-gpus "$d/both.img" 'this restore sees 1' CUDA_VISIBLE_DEVICES=1
}

case_again() {
	d=$w/USR2
	[ -e "$d/latest" ] || { result again FAIL "no image"; return; }
	img=$(readlink -f "$d/latest")
	rm -f "$d/latest"
	"$restore" "$img" < /dev/null > "$w/again.out" 2> "$w/again.err" &
	pid=$!
	wait_until has_lines "$w/again.out" 3
	kill -USR2 $pid
	wait_until test -e "$d/latest"
	wait $pid
	st=$?
	[ $st -eq 0 ] && [ -e "$d/latest" ] && tail_ok "$w/again.out" && result again PASS ||
		result again FAIL "exit $st, or no second image, or output differs" "$w/again.err"
	[ -e "$d/latest" ] && restored restore-again "$d/latest"
}

echo "gpu-test-rt: rtloop, rtloop-shared, rtloop-mt, rtloop-workers, rtmixed, rtmixed-shared" \
	"in the driver-assisted mode: $iters iterations, saved after $save_at"
for entry in ${GPU_TEST_RT_PROGRAMS:-rtloop rtloop-shared rtloop-mt rtloop-workers rtmixed rtmixed-shared}; do
	prog=${entry%-mt}
	opts=
	run_opts=
	[ "$prog" != "$entry" ] && opts="--threads 4"
	tree=0
	case $entry in *-workers) prog=${entry%-workers} opts="--workers 2" tree=1 ;; esac
	case $prog in rtmixed*) run_opts=--cuda=driver ;; esac
	w=$tmp/$entry
	mkdir -p "$w"
	ref=$w/ref.out
	timeout -k 5 "$limit" "$bin/$prog" $opts --iters "$iters" --sleep-ms 0 > "$ref" 2> "$w/ref.err" &&
		[ "$(lines "$ref")" -eq "$iters" ] && result ref PASS ||
		{ result ref FAIL "the reference run failed" "$w/ref.err"; continue; }
	[ $tree = 0 ] && case_save_at
	case_signal USR1
	case_signal USR2
	case_again
	[ $tree = 0 ] && [ "$gpus" -ge 2 ] && [ -z "${CUDA_VISIBLE_DEVICES+set}" ] && case_other_gpu
done
echo
printf '%-16s %-14s %s\n' sample case result
cat "$tmp/results"
[ "$gpus" -ge 2 ] || echo "gpu-test-rt: one GPU visible: no other-gpu case"
echo "gpu-test-rt: $passed passed, $failed failed"
[ $failed -eq 0 ]
