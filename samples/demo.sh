#!/bin/sh
# make demo: an unmodified program is checkpointed, killed and restored, and
# carries on where it was.
set -eu
build=${1:-build}
dir=$build/demo
rm -rf "$dir"
mkdir -p "$dir"

echo "== 1. run samples/series under selfckpt-run (it knows nothing of selfckpt)"
"$build/bin/selfckpt-run" --dir "$dir" -- "$build/samples/series" 25 &
pid=$!
sleep 2
echo "== 2. SIGUSR1: checkpoint now, while it runs"
kill -USR1 "$pid"
i=0
while [ ! -e "$dir/latest" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.3
echo "== 3. kill -9 the program"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
echo "== 4. the image:"
"$build/bin/selfckpt-inspect" --verify "$dir/latest"
echo "== 5. selfckpt-restore: the program continues from the checkpoint"
"$build/bin/selfckpt-restore" "$dir/latest"
echo "== 6. the API: samples/api checkpoints itself at step 5"
"$build/samples/api" "$dir/api.sckpt"
echo "== 7. restore it: it comes back at step 5"
"$build/bin/selfckpt-restore" "$dir/api.sckpt"
