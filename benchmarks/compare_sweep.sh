#!/usr/bin/env bash
# compare.py's sweep benchmark (issue 20): 3 budgets x 4 tokenizers x 2 seeds on the default corpus, timed,
# then the same call again, which must train nothing (every run "done before").
#
#   bash benchmarks/compare_sweep.sh                 # about 35-45 minutes on 2 CPU cores
#   OUT=/tmp/sweep BUDGETS=5e11,1e12,2e12 bash benchmarks/compare_sweep.sh
#
# Runs go to $OUT (default checkpoints/sweep-bench, its own folder so that no earlier run is reused), the
# report to reports/sweep-bench.  Prints the wall and CPU time of the first call and of the second.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python}
OUT=${OUT:-checkpoints/sweep-bench}
BUDGETS=${BUDGETS:-1e12,2e12,5e12}
args=(byte bpe:512 bpe:2048 bpe:8192 --budget-flops "$BUDGETS" --seeds 2 --out-dir "$OUT" --report sweep-bench)
runs=$((4 * 2 * $(tr ',' '\n' <<<"$BUDGETS" | wc -l)))
echo "sweep: ${args[*]} ($runs runs), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
/usr/bin/time -f "first call: %e s wall, %U s user + %S s system CPU" "$PY" compare.py "${args[@]}"
/usr/bin/time -f "second call: %e s wall, %U s user + %S s system CPU" "$PY" compare.py "${args[@]}" | tee "$log"
done_before=$(grep -c "done before" "$log" || true)
if [ "$done_before" -ne "$runs" ]; then
    echo "second call: $done_before of $runs runs were done before: it trained again" >&2
    exit 1
fi
echo "second call: all $runs runs done before, nothing trained"
