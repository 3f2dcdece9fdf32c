#!/bin/bash
# Measures the many-shape CPU set of issue #10 (tests/bench/results/cpu-shapes/): every problem of
# problems.json tuned by `auto` (seed 0) with a fixed budget, one measurement cache per problem, as
# `ktune bench --kernel ... --measure-cache` writes it. Resumable: a problem whose cache already holds
# the budget replays in seconds, and a killed run continues where it stopped (the cache is appended
# after every measurement). Gemm and conv2d problems are interleaved, so a partial run has both.
#
#   tools/cpu_shapes/measure.sh [OUT_DIR [BUDGET]]     (from the repository root, after `make build`)
#
# OUT_DIR defaults to tests/bench/results/cpu-shapes, BUDGET to 100 (the checked-in set: measured
# first with 50, then extended to 100 with the same seed, which replays the first 50 from the cache).
# Measurements are pinned to the last core (ktune bench's default); keep the machine otherwise idle.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/tests/bench/results/cpu-shapes}
budget=${2:-100}
ktune=${KTUNE:-$root/build/ktune}
mkdir -p "$out/gemm" "$out/conv2d"
python3 - "$here/problems.json" <<'PY' |
import json, sys
p = json.load(open(sys.argv[1]))
g, c = p["gemm"], p["conv2d"]
for i in range(max(len(g), len(c))):
    for kernel, problems in (("gemm", g), ("conv2d", c)):
        if i < len(problems):
            d = problems[i]
            slug = "_".join(f"{a}{d[a]}" for a in d)
            print(kernel, slug, json.dumps(d, separators=(",", ":")))
PY
while read -r kernel slug problem; do
    start=$(date +%s)
    "$ktune" bench --kernel "$kernel" --device cpu --strategies auto --seeds 1 --budget "$budget" \
        --problem "$problem" --measure-cache "$out/$kernel/$slug.jsonl" --progress 0 > /dev/null
    echo "$(date +%T) $kernel $slug $(( $(date +%s) - start )) s"
done
