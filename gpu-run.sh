#!/bin/sh
# usage: gpu-run.sh 1|2
B=build-gpu
if [ "$1" = 1 ]; then
nvidia-smi -L
echo "== gpu-test"; timeout 280 sh samples/cuda/gpu-test.sh $B > $OUT/gpu-test.log 2>&1; echo "gpu-test rc=$?"; tail -3 $OUT/gpu-test.log
grep -E "^loader" $OUT/gpu-test.log
echo "== gpu-test-rt"; timeout 280 sh samples/cuda/rt/gpu-test-rt.sh $B > $OUT/gpu-test-rt.log 2>&1; echo "gpu-test-rt rc=$?"; tail -2 $OUT/gpu-test-rt.log
else
python3 --version 2>&1
echo "== trees"
for c in pipeline grandchild make escape missing zombie daemon save; do
	timeout 120 sh tests/cli/trees.sh $B $c > $OUT/trees-$c.log 2>&1; echo "trees $c rc=$?"
done
echo "== bench-tree"; timeout 400 $B/tests/bench-tree --runs 3 > $OUT/bench-tree.log 2>&1; echo "bench-tree rc=$?"; cat $OUT/bench-tree.log
fi
