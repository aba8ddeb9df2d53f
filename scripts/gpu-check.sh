#!/usr/bin/env bash
# Runs on a GPU machine from the repository root, with target/gpu-bundle and target/ptx
# present (cargo xtask gpu-bundle; the PTX is in target/gpu-bundle/ptx): the GPU test suite, the
# differential test when target/difftest/bundle is there, the examples, and compute-sanitizer.
# Logs go to $OUT (or ./gpu-logs).
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
status=0
run() { # name, command...
    local name=$1; shift
    echo "=== $name: $*" | tee -a "$out/summary.txt"
    timeout "${STEP_TIMEOUT:-150}" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    tail -n 15 "$out/$name.log"
    echo "=== $name: exit $rc" | tee -a "$out/summary.txt"
    [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv | tee "$out/gpu.txt"
export KERNEL_TEST_DEVICE=cuda KERNEL_SYNC=1 KERNEL_PTX_DIR=$PWD/target/gpu-bundle/ptx
# The integration tests' GPU subjects (modules of the suite binary), one step each.
for subject in $(cat target/gpu-bundle/tests/suite.subjects); do
    run "test-$subject" target/gpu-bundle/tests/suite "$subject::" --test-threads=1
done
# kernel-runtime's own GPU tests: those that place their own PTX run only without
# KERNEL_PTX_DIR.
run "test-runtime_cuda" env -u KERNEL_PTX_DIR target/gpu-bundle/tests/runtime_cuda --test-threads=1
# The differential test (cargo xtask difftest --bundle): random valid kernels on the CPU
# backend and on the GPU, compared; each runner prints its kernel and mismatch counts.
for d in target/difftest/bundle/difftest_*; do
    [ -x "$d" ] && run "difftest-$(basename "$d")" env KERNEL_PTX_DIR="$PWD/target/difftest/bundle/ptx" "$d"
done
for b in target/gpu-bundle/bin/*; do
    if [ "$(basename "$b")" = kernel-crate ]; then
        # The template downstream crate embeds its PTX: run it from the binary alone, with no
        # KERNEL_PTX_DIR and from / (no target/ptx on the way up).
        run "example-$(basename "$b")" env -u KERNEL_PTX_DIR --chdir=/ "$PWD/$b"
    else
        run "example-$(basename "$b")" "$b"
    fi
done
if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck; do
        # Ragged sizes: masked edges in M, N and K.
        run "sanitizer-$tool-matmul" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/bin/matmul --size 150 130 70
        # Split launches: the matmul test that forces them (with_forced_split) on ragged sizes.
        run "sanitizer-$tool-matmul-split" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite --exact matmul::forced_split_ragged_300x260x200 --test-threads=1
        run "sanitizer-$tool-vector_add" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/bin/vector_add
        run "sanitizer-$tool-tests-kernels" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite kernels:: --test-threads=1
        run "sanitizer-$tool-tests-language" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite language:: --test-threads=1
        run "sanitizer-$tool-tests-atomics" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite atomics:: --test-threads=1
        run "sanitizer-$tool-tests-math" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite math:: --test-threads=1
        run "sanitizer-$tool-tests-random" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite random:: --test-threads=1
        run "sanitizer-$tool-tests-scans" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite scans:: --test-threads=1
        run "sanitizer-$tool-tests-reductions" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite reductions:: --test-threads=1
        run "sanitizer-$tool-tests-layer_norm" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite layer_norm:: --test-threads=1
        run "sanitizer-$tool-tests-attention" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite attention:: --test-threads=1
        run "sanitizer-$tool-tests-debug" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite debug:: --test-threads=1
        run "sanitizer-$tool-tests-eight_bit" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite eight_bit:: --test-threads=1
        run "sanitizer-$tool-tests-matmul_8bit" compute-sanitizer --tool "$tool" --error-exitcode 9 target/gpu-bundle/tests/suite matmul_8bit:: --test-threads=1
    done
fi
echo "--- summary"
cat "$out/summary.txt"
exit $status
