#!/usr/bin/env bash
# Runs the benchmarks under bench/ and records each one's JSON, with the
# machine it ran on, into docs/results/data/; then renders
# docs/results/README.md from them (tools/render_results.py).
#   bash tools/run_benchmarks.sh [BUILD_DIR] [--full]
# BUILD_DIR (default build) must have the benchmarks built in Release:
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"
# Without --full each benchmark runs in its --quick form, minutes in all; with
# it, at the sizes docs/benchmarks.md gives (an hour or more on 2 cores).
# Timings mean something only on a quiet machine: run nothing else meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
full=0
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    -*) echo "run_benchmarks: unknown flag '$arg'; allowed: --full" >&2; exit 2 ;;
    *) build=$arg ;;
  esac
done
bench="$build/bench"
if [ ! -x "$bench/hint_overhead" ]; then
  echo "run_benchmarks: no benchmarks in $bench; build them first (see the comment at the top of $0)" >&2
  exit 2
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
quick=(--quick)
((full)) && quick=()

# name, JSON file, then the command that writes it.
run() {
  local name=$1 json=$2; shift 2
  echo "== $name: $*"
  local start=$SECONDS
  "$@"
  echo "== $name: $((SECONDS - start)) s"
  python3 tools/render_results.py record "$name" "$json" -- "$@"
}

run copy_bandwidth "$scratch/copy.json" "$bench/copy_bandwidth" "${quick[@]}" --json "$scratch/copy.json"
run hint_overhead "$scratch/hint.json" "$bench/hint_overhead" "${quick[@]}" --json "$scratch/hint.json"
run plan_footprint "$scratch/plan.json" "$bench/plan_footprint" "${quick[@]}" --json "$scratch/plan.json"
if [ -x "$bench/training_footprint" ]; then
  run training_footprint "$scratch/footprint.json" "$bench/training_footprint" "${quick[@]}" \
    --json "$scratch/footprint.json"
  run autoswap_reproduction "$scratch/autoswap.json" "$bench/autoswap_reproduction" "${quick[@]}" \
    --json "$scratch/autoswap.json"
  run model_accuracy "$scratch/accuracy.json" "$bench/model_accuracy" "${quick[@]}" --models resnet \
    --profile-cache "$scratch/profiles.json" --json "$scratch/accuracy.json"
  run paper_reproduction "$scratch/plots/paper_reproduction.json" "$bench/paper_reproduction" "${quick[@]}" \
    --profile-cache "$scratch/profiles.json" --plots "$scratch/plots"
  run train_throughput "$scratch/throughput.json" "$bench/train_throughput" --models resnet18 \
    --json "$scratch/throughput.json"
fi
python3 tools/render_results.py render
