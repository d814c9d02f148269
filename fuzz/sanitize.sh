#!/usr/bin/env bash
# Builds the C++ core (csrc/ without csrc/python/, the bindings) and fuzz/core_fuzz.cpp
# with AddressSanitizer and UndefinedBehaviorSanitizer, then runs the driver:
#   bash fuzz/sanitize.sh                  the quick fixed cases (scripts/test.sh runs this)
#   bash fuzz/sanitize.sh --seconds 600    random cases for 10 minutes (--seed N to vary)
# Any sanitizer report (-fno-sanitize-recover=all) or mismatch exits non-zero.
# Objects go to build/sanitize/; each is rebuilt when its source or any header changes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CXX="${CXX:-g++}"
OUT="build/sanitize"
FLAGS=(-std=c++17 -O1 -g -fno-omit-frame-pointer -pthread -Icsrc
    -fsanitize=address,undefined -fno-sanitize-recover=all)
mkdir -p "$OUT"
# One stamp for the compiler, the flags and every header: a change rebuilds every object.
stamp="$({ "$CXX" --version | head -1; echo "${FLAGS[*]}"; find csrc -name "*.h" | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16)"
if [ "$(cat "$OUT/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -f "$OUT"/*.o "$OUT/core_fuzz"
    echo "$stamp" >"$OUT/stamp"
fi
objects=()
pids=()
# Every .cpp of csrc/ outside csrc/python/ (the only files that see Python); object names keep the layer
# (csrc/encode/encoder.cpp -> encode_encoder.o) so two layers may hold the same file name.
for src in fuzz/core_fuzz.cpp $(find csrc -name "*.cpp" -not -path "csrc/python/*" | LC_ALL=C sort); do
    rel="${src#csrc/}"
    obj="$OUT/${rel//\//_}"
    obj="${obj%.cpp}.o"
    objects+=("$obj")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
        # two compilers at a time
        if [ "${#pids[@]}" -ge 2 ]; then
            wait "${pids[0]}"
            pids=("${pids[@]:1}")
        fi
        "$CXX" "${FLAGS[@]}" -c "$src" -o "$obj.tmp" && mv "$obj.tmp" "$obj" &
        pids+=("$!")
    fi
done
for pid in "${pids[@]}"; do wait "$pid"; done
"$CXX" "${FLAGS[@]}" "${objects[@]}" -o "$OUT/core_fuzz"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [ "$#" -eq 0 ]; then
    set -- --quick
fi
exec "$OUT/core_fuzz" "$@"
