#!/usr/bin/env bash
# compare.py --jobs (issue 35): the same 3 x 3 x 3 isoFLOP sweep with --jobs 1 and --jobs 2, each in a new
# --out-dir; checks that all 27 runs' bits per character and block losses are the same in both, then prints
# the wall and CPU times and their ratio, with the load and the CPU model.
#
#   bash benchmarks/compare_jobs.sh            # about 7 minutes on 2 quiet CPU cores
#   OUT=/tmp/jobs BUDGETS=1e9,3e9 bash benchmarks/compare_jobs.sh   # a quick check of the script itself
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python}
OUT=${OUT:-checkpoints/jobs-bench}
BUDGETS=${BUDGETS:-1e10,3e10,1e11}
rm -rf "$OUT"
common=(byte bpe:512 bpe:2048 --sizes tiny,small,base --budget-flops "$BUDGETS" --threads 1 --eval-interval 1000
    --pretrain-args "--eval-chars 5000" --bits-chars 10000 --block-chars 1000 --perturb none)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
# the token files first, so that neither timed call prepares data
"$PY" compare.py byte bpe:512 bpe:2048 --budget-flops 1e9 --threads 1 --bits-chars 10000 --block-chars 1000 \
    --perturb none --out-dir "$OUT/prep" --reports-dir "$OUT/reports" --report jobs-bench-prep >/dev/null
declare -A wall
for j in 1 2; do
    echo "--jobs $j: load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
    t=$(mktemp)
    trap 'rm -f "$t"' EXIT
    if ! /usr/bin/time -f "%e %U %S" -o "$t" "$PY" compare.py "${common[@]}" --jobs "$j" --out-dir "$OUT/j$j" \
        --reports-dir "$OUT/reports" --report "jobs-bench-$j" >"$OUT/j$j.log" 2>&1; then
        echo "--jobs $j failed: see $OUT/j$j.log" >&2
        exit 1
    fi
    read -r w u s <"$t"
    rm -f "$t"
    wall[$j]=$w
    echo "--jobs $j: $w s wall, $u s user + $s s system CPU; load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
done
runs=$((9 * $(tr ',' '\n' <<<"$BUDGETS" | wc -l)))
OUT="$OUT" RUNS="$runs" "$PY" - <<'PY'
import json, os, sys
def runs(n):
    doc = json.load(open(f"{os.environ['OUT']}/reports/jobs-bench-{n}/results.json"))
    return {(r["spec"], r.get("size"), r["budget"], r["seed"]): (r["bits_per_char"], r["block_nats"]) for r in doc["results"]}
a, b = runs(1), runs(2)
if len(a) != int(os.environ["RUNS"]):
    sys.exit(f"{len(a)} runs in the report, {os.environ['RUNS']} expected")
if a != b:
    sys.exit(f"--jobs 1 and --jobs 2 differ in {sum(a.get(k) != b.get(k) for k in a | b)} runs")
print(f"all {len(a)} runs: the same bits per character and block losses")
PY
awk -v a="${wall[1]}" -v b="${wall[2]}" 'BEGIN { printf "--jobs 2 / --jobs 1 wall time: %.3fx (goal: at most 0.6x)\n", b / a }'
