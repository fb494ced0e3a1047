#!/usr/bin/env bash
# The GPU check: one command that builds the CUDA parts of murmur, runs every
# test labelled `cuda` and the GPU benchmarks, and prints one table.
#
#   scripts/gpu-check.sh            build folder build-gpu/ (MURMUR_BUILD_DIR)
#
# What it runs, in order:
#   1. cmake with MURMUR_CUDA=ON for this machine's GPU
#      (CMAKE_CUDA_ARCHITECTURES=native; MURMUR_CUDA_ARCH to override);
#   2. only the targets below (not the whole tree): the cuda-labelled tests,
#      compress_cuda_bench and model_bench;
#   3. ctest -L cuda: the CUDA kernels against their CPU reference bodies,
#      the layers and the models on cuBLAS against the CPU model;
#   4. compress_cuda_bench: every compression kernel on 16 M floats against
#      a device-to-device memcpy of the same bytes, each result first
#      checked against the CPU reference;
#   5. model_bench: a training step of the MLP and the CNN on the GPU
#      (batch 64 and 256) against the CPU model (batch 64, one BLAS thread).
# The table at the end has each benchmark's median over 5 repetitions and
# its ratio to the baseline measured in the same run (memcpy; the CPU step).
#
# Without a GPU (no nvidia-smi, or it lists no device) it says so and exits
# 3 before building anything: the CPU suite (scripts/test.sh) already
# builds the CUDA code and runs the tests, which skip with a reason.
# Budget: about 8 minutes on one H200 with 16 cores (most of it nvcc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MURMUR_BUILD_DIR:-$root/build-gpu}
jobs=${MURMUR_JOBS:-$(nproc)}
arch=${MURMUR_CUDA_ARCH:-native}
started=$(date +%s)

if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check: no GPU here (nvidia-smi missing or lists no device); nothing to check" >&2
  exit 3
fi
nvidia-smi -L

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMURMUR_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DMURMUR_BENCH=ON > "$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
mapfile -t test_targets < <(grep -o 'kernels_[a-z_]*cuda_test\|model_cuda_test' "$root/tests/kernels/CMakeLists.txt" \
  "$root/tests/peer/model.cmake" | cut -d: -f2 | sort -u)
cmake --build "$build" -j "$jobs" --target "${test_targets[@]}" compress_cuda_bench model_bench
built=$(date +%s)

status=0
# -V: a test that skipped (no usable device after all) says so; it must not
# pass as a check that ran.
ctest --test-dir "$build" -L cuda -V --timeout 300 > "$build/gpu-check-ctest.txt" 2>&1 || status=1
grep -E '^[0-9]+/[0-9]+ Test|tests passed|SKIPPED' "$build/gpu-check-ctest.txt" || true
if grep -q '\[  SKIPPED \]' "$build/gpu-check-ctest.txt"; then
  echo "gpu-check: CUDA tests skipped: the GPU nvidia-smi lists is not usable by this build (driver, CUDA_VISIBLE_DEVICES?)" >&2
  status=1
fi
tested=$(date +%s)

bench_status=0
rm -f "$build/gpu-check-compress.json" "$build/gpu-check-model.json"
"$build/bench/kernels/compress_cuda_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$build/gpu-check-compress.json" > /dev/null || bench_status=$?
case $bench_status in
  0) ;;
  3) echo "gpu-check: compress_cuda_bench found no usable CUDA device" >&2; exit 1 ;;
  *) echo "gpu-check: compress_cuda_bench: a kernel failed or differs from the CPU reference (see the table)" >&2
     status=1 ;;
esac
"$build/bench/peer/model_bench" --benchmark_filter='BM_TrainBatch/(mlp|cnn)' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$build/gpu-check-model.json" > /dev/null || status=1
finished=$(date +%s)

python3 - "$build/gpu-check-compress.json" "$build/gpu-check-model.json" <<'PY'
import json, sys

def medians(path):
    try:
        with open(path) as f:
            runs = json.load(f)["benchmarks"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {}
    for b in runs:
        if b.get("aggregate_name") == "median":
            out[b["run_name"]] = b
        if b.get("error_occurred"):
            out[b["run_name"]] = b
    return out

compress = medians(sys.argv[1])
expected = ["BM_DeviceMemcpy", "BM_F16Encode", "BM_Bf16Encode", "BM_QsgdEncode", "BM_SignEncode",
            "BM_TopkSelect", "BM_RandkIndices", "BM_PowerSgdFactor"]
for name in expected:  # a case that stopped with an error reports no aggregate
    compress.setdefault(name, {"error_occurred": True, "error_message": "no result (failed; see its output)"})
memcpy = compress.get("BM_DeviceMemcpy", {}).get("GBps")
print("\n| kernel (16 M floats on the GPU) | GB/s of fp32 input | vs device memcpy |")
print("|---|---:|---:|")
for name, b in compress.items():
    if b.get("error_occurred"):
        print(f"| {name} | error: {b.get('error_message')} | |")
        continue
    ratio = f"{b['GBps'] / memcpy:.2f}" if memcpy else "?"
    print(f"| {name} | {b['GBps']:.1f} | {ratio} |")

model = medians(sys.argv[2])
print("\n| training step | images/s | vs CPU, same model, batch 64 |")
print("|---|---:|---:|")
cpu = {name.split("/")[1]: b["items_per_second"] for name, b in model.items()
       if name.startswith("BM_TrainBatch/") and "/cuda/" not in name and not b.get("error_occurred")}
for name, b in model.items():
    if b.get("error_occurred"):
        print(f"| {name} | error: {b.get('error_message')} | |")
        continue
    base = cpu.get(name.split("/")[1])
    ratio = f"{b['items_per_second'] / base:.1f}x" if base else ""
    print(f"| {name} | {b['items_per_second']:.0f} | {ratio} |")
PY

echo
echo "gpu-check: build $((built - started)) s, tests $((tested - built)) s, benchmarks $((finished - tested)) s," \
  "total $((finished - started)) s; ctest: $(grep -o '[0-9]*% tests passed.*' "$build/gpu-check-ctest.txt" || echo '?');" \
  "$([ $status = 0 ] && echo PASSED || echo FAILED)"
exit $status
