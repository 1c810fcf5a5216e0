#!/bin/sh
# Real programs not written here, run unmodified under selfckpt-run: checkpoint
# by signal, kill -9, restore; the output must be exactly an uninterrupted run's.
#   real_programs.sh BUILD python|bc SIGNAL
set -u
build=$(cd "$1" && pwd) what=$2 sig=$3
dir=$(mktemp -d /tmp/sc-real-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

case $what in
python)
	cat > loop.py <<'PY'
import time
total = 0
for i in range(40):
    total += sum(j * j for j in range(30000))
    print(i, total, flush=True)
    time.sleep(0.05)
PY
	set -- python3 loop.py
	input=/dev/null
	;;
bc)
	echo 'scale=2500; 4*a(1)' > pi.bc # about 4 s: the signal comes at 1 s
	set -- bc -l -q
	input=pi.bc
	;;
*)
	echo "unknown program $what" >&2
	exit 2
	;;
esac

"$@" < "$input" > reference.txt || { echo "reference run failed" >&2; exit 1; }

"$build/bin/selfckpt-run" --dir "$dir" -- "$@" < "$input" > before.txt 2> run.err &
pid=$!
sleep 1
kill -"$sig" "$pid"
i=0
while [ ! -e latest ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e latest ] || { echo "no image after SIG$sig" >&2; cat run.err >&2; exit 1; }
sleep 0.1
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# The restored process reads the restorer's standard input: give it none.
"$build/bin/selfckpt-restore" latest < /dev/null > after.txt 2> restore.err
status=$?
[ $status -eq 0 ] || { echo "restore exited $status" >&2; cat restore.err >&2; exit 1; }

# The restored run repeats what the killed one printed after the checkpoint:
# the output is the lines printed up to the checkpoint, then the restored ones.
case $what in
python)
	first=$(head -n 1 after.txt | cut -d' ' -f1)
	[ -n "$first" ] || { echo "the restored run printed nothing" >&2; exit 1; }
	head -n "$first" before.txt > combined.txt
	cat after.txt >> combined.txt
	;;
bc)
	# bc prints only at the end: the killed run printed nothing
	[ ! -s before.txt ] || { echo "bc finished before the checkpoint" >&2; exit 1; }
	cp after.txt combined.txt
	;;
esac
cmp -s combined.txt reference.txt || {
	echo "output differs from the uninterrupted run:" >&2
	diff combined.txt reference.txt | head -20 >&2
	exit 1
}
exit 0
