#!/bin/sh
export SELFCKPT_BUILD=build-gpu
GPU_TEST_SAMPLES="managed graph vecadd" sh samples/cuda/gpu-test.sh build-gpu > $OUT/gpu-test.log 2>&1; echo "gpu-test rc=$?"
grep -E "^(managed|graph|vecadd) " $OUT/gpu-test.log | grep -v PASS; tail -1 $OUT/gpu-test.log
# the managed sample's SIGUSR2 case, ten times over
ok=0; for i in 1 2 3 4 5 6 7 8 9 10; do GPU_TEST_SAMPLES=managed sh samples/cuda/gpu-test.sh build-gpu > $OUT/m$i.log 2>&1 && ok=$((ok+1)); done; echo "managed gpu-test 10x: $ok/10 green"
