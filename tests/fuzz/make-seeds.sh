#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make-seeds.sh BUILD - the seed corpora of the fuzz targets, in BUILD/fuzz/seeds/TARGET/
# (make fuzz-build runs it; tests/fuzz/run-all.sh reads them).
#
#   fuzz_reader      the golden images, good and broken (tests/golden/)
#   fuzz_<record>    the records of that type (fuzz_records.h) from the golden images and
#                    from images that the test programs of BUILD/tests/progs write of
#                    themselves (fds, threads, signals, mappings of every kind, a CUDA
#                    program on the software device; timers, objects, sockets and rights
#                    under selfckpt-run: every descriptor kind with its state, descriptors
#                    in flight), and a
#                    cuda-log record holding the module images of BUILD/tests/fixtures
#                    where nvcc made them
#
# A test program that is missing or fails is named and skipped: the golden images
# still seed every target.
set -eu

build=$1
out=$build/fuzz/seeds
seed=$build/fuzz/fuzz_seed
work=$(mktemp -d "${TMPDIR:-/tmp}/selfckpt-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

rm -rf "$out"
mkdir -p "$out/reader" "$work/progs"
cp tests/golden/good/*.sckpt tests/golden/broken/*.sckpt "$out/reader/"

# prog NAME IMAGE ARGS...: the program checkpoints itself into IMAGE and kills itself.
prog() {
	name=$1 image=$work/progs/$2.sckpt
	shift 2
	if [ ! -x "$build/tests/progs/$name" ]; then
		echo "make-seeds: no $build/tests/progs/$name (make test-progs): skipped" >&2
		return 0
	fi
	mkdir -p "$work/dir-$name"
	timeout 60 "$build/tests/progs/$name" "$image" "$work/dir-$name" "$@" \
		> /dev/null 2>&1 < /dev/null || true
	[ -s "$image" ] || echo "make-seeds: $name wrote no image: skipped" >&2
	return 0
}

awk 'BEGIN { for (i = 0; i < 5 * 4096 + 100; i++) printf "%c", 65 + i % 26 }' \
	> "$work/mapped.dat"
prog files files
prog threads threads
prog signals signals
prog procstate procstate
prog tlsmisc tlsmisc
prog heap heap 4
prog mapfile mapfile "$work/mapped.dat"
for kind in file anon prot sparse; do
	prog mappings "mappings-$kind" "$kind"
done
if [ -e "$build/tests/libsoftcuda.so.1" ] && [ -x "$build/bin/selfckpt-gpu-proxy" ]; then
	SELFCKPT_LIBCUDA=$(realpath "$build/tests/libsoftcuda.so.1") \
	SELFCKPT_PROXY=$(realpath "$build/bin/selfckpt-gpu-proxy") \
		prog cuda_state cuda_state "$(realpath "$build/tests/progs/libcuda-kernels.so")"
fi
# Programs of their own under selfckpt-run, checkpointed by SIGUSR2 while they run: timers
# (while its timers tick), objects and sockets (the state of every descriptor kind), rights
# (descriptors in flight in socket queues), locks, and sysvipc (System V segments, semaphores
# and a message queue).
under_run() {
	name=$1
	shift
	if [ ! -x "$build/bin/selfckpt-run" ] || [ ! -x "$build/tests/progs/$name" ]; then
		echo "make-seeds: no $build/tests/progs/$name or selfckpt-run: skipped" >&2
		return 0
	fi
	"$build/bin/selfckpt-run" --dir "$work/$name" -- "$build/tests/progs/$name" "$@" \
		> /dev/null 2>&1 < /dev/null &
	pid=$!
	sleep 0.3
	kill -USR2 "$pid" 2> /dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ -e "$work/$name/latest" ] && break
		sleep 0.2
	done
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	cp "$work/$name/latest" "$work/progs/$name.sckpt" 2> /dev/null ||
		echo "make-seeds: $name wrote no image: skipped" >&2
}
under_run timers
mkdir -p "$work/objects-dir" "$work/sockets-dir" "$work/rights-dir"
under_run objects "$work/objects-dir"
under_run sockets "$work/sockets-dir"
under_run rights "$work/rights-dir"
mkdir -p "$work/locks-dir"
under_run locks "$work/locks-dir"
# sysvipc: the objects of the run it killed stay behind; their ids are in its folder
mkdir -p "$work/sysvipc-dir"
under_run sysvipc "$work/sysvipc-dir"
if read -r a b c sem q < "$work/sysvipc-dir/ids" 2> /dev/null; then
	ipcrm -m "$a" -m "$b" -m "$c" -s "$sem" -q "$q" 2> /dev/null || true
fi

# The images, each under its own name; every target gets the records of its type.
n=0
for img in tests/golden/good/*.sckpt tests/golden/broken/*.sckpt "$work"/progs/*.sckpt; do
	[ -s "$img" ] || continue
	n=$((n + 1))
	named=$work/$(basename "$(dirname "$img")")-$(basename "$img")
	cp "$img" "$named"
	"$seed" "$out" "$named"
done
modules=$(ls "$build"/tests/fixtures/kernels* 2> /dev/null || true)
if [ -n "$modules" ]; then
	# shellcheck disable=SC2086 # one argument per module image
	"$seed" --modules "$out" $modules
fi
for dir in "$out"/*; do
	printf 'make-seeds: %-10s %4d seeds\n' "$(basename "$dir")" "$(ls "$dir" | wc -l)"
done
echo "make-seeds: from $n images, in $out"
