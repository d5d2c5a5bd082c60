#!/usr/bin/env bash
# One device call: the GPU tests of the fused resolve (7d88ba9's load batches), then Nsight Compute
# (--set full) on one call of ours and of FlashMLA at the shapes where we lose. Text exports land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -x -k "resolving_its_own_ids or test_grid or holes or all_duplicates or cuda_graph" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1); echo "ncu: $NCU"
prof() {  # name who B H W
  local name=$1; shift
  timeout 150 "$NCU" --profile-from-start off --set full --clock-control none --import-source no -f -o "/tmp/$name" \
    python benchmarks/ncu_one_call.py "$@" > "/tmp/$name.log" 2>&1; echo "$name rc=$?"; tail -2 "/tmp/$name.log"
  "$NCU" -i "/tmp/$name.ncu-rep" --page details >> "$OUT/details.txt" 2>&1
  "$NCU" -i "/tmp/$name.ncu-rep" --page raw --csv > "$OUT/raw_$name.csv" 2>&1
}
prof ours_b128_h64 ours 128 64 2048
prof fm_b128_h64 flashmla 128 64 2048
prof ours_b256_h32 ours 256 32 2048
prof ours_b1_h64 ours 1 64 2048
prof ours_b128_h128 ours 128 128 2048
"$NCU" -i /tmp/ours_b128_h64.ncu-rep --page source --csv --print-source sass > "$OUT/src_ours_b128_h64.csv" 2>&1; echo "src rc=$? $(wc -c < $OUT/src_ours_b128_h64.csv)"
grep -E "^  [a-zA-Z_]|Duration|Throughput|Pipe|Registers|Shared Memory Configuration|Achieved Occupancy|Issue Slots|No Eligible|Active Warps" "$OUT/details.txt" | head -150
python benchmarks/ncu_summary.py $(for f in "$OUT"/raw_*.csv; do n=${f##*/raw_}; echo "${n%.csv}=$f"; done)
