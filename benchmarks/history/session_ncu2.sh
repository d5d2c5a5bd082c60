#!/usr/bin/env bash
# One device call: Nsight Compute on the decode with the streamed resolve and with the resolve
# launch (B=128 H=64 and H=8, W=2048), source-level stalls of the streamed one. Text lands in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
prof() {  # name args...
  local name=$1; shift
  timeout 150 "$NCU" --profile-from-start off --set full --clock-control none --import-source no -f -o "/tmp/$name" \
    python benchmarks/ncu_one_call.py "$@" > "/tmp/$name.log" 2>&1; echo "$name rc=$?"; tail -1 "/tmp/$name.log"
  "$NCU" -i "/tmp/$name.ncu-rep" --page raw --csv > "$OUT/raw_$name.csv" 2>&1
}
prof stream_h64 ours 128 64 2048 8192 stream
prof off_h64 ours 128 64 2048 8192 off
prof stream_h8 ours 128 8 2048 8192 stream
"$NCU" -i /tmp/stream_h64.ncu-rep --page source --csv --print-source sass > "$OUT/src_stream_h64.csv" 2>&1
"$NCU" -i /tmp/off_h64.ncu-rep --page source --csv --print-source sass --kernel-name regex:Decode > "$OUT/src_off_h64.csv" 2>&1
"$NCU" -i /tmp/stream_h8.ncu-rep --page source --csv --print-source sass > "$OUT/src_stream_h8.csv" 2>&1
ls -la "$OUT"
python benchmarks/ncu_summary.py $(for f in "$OUT"/raw_*.csv; do n=${f##*/raw_}; echo "${n%.csv}=$f"; done)
