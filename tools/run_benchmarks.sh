#!/usr/bin/env bash
# Runs the benchmarks under bench/ and the default train_cnn, and records
# each one's JSON, with the machine it ran on, into docs/results/data/; then
# renders docs/results/ from them (tools/render_results.py: the summary with
# the headline charts, and a page per benchmark).
#   bash tools/run_benchmarks.sh [BUILD_DIR] [--quick | --full]
# BUILD_DIR (default build) must have the benchmarks built in Release:
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"
# The default forms take about a quarter of an hour on 2 cores: most
# benchmarks at their own defaults, the planners' MIP held to short limits,
# AutoSwap's reproduction on two networks, and the emulated policy comparison
# on ResNet-18 at a fast tier of 20%. --quick runs every
# smoke form instead (minutes; they check that a program works, not how fast
# it is); --full runs the sweeps docs/benchmarks.md gives (hours).
# Timings mean something only on a quiet machine: run nothing else meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
form=standard
for arg in "$@"; do
  case "$arg" in
    --quick) form=quick ;;
    --full) form=full ;;
    -*) echo "run_benchmarks: unknown flag '$arg'; allowed: --quick, --full" >&2; exit 2 ;;
    *) build=$arg ;;
  esac
done
bench="$build/bench"
if [ ! -x "$bench/hint_overhead" ] || [ ! -x "$build/examples/train_cnn" ]; then
  echo "run_benchmarks: no benchmarks or train_cnn in $build; build them first (see the top of $0)" >&2
  exit 2
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
quick=()
[ "$form" = quick ] && quick=(--quick)

# name, JSON file, then the command that writes it.
run() {
  local name=$1 json=$2; shift 2
  echo "== $name: $*"
  local start=$SECONDS
  "$@"
  echo "== $name: $((SECONDS - start)) s"
  python3 tools/render_results.py record "$name" "$json" -- "$@"
}

# The main example as a user first runs it, its wall time included.
run train_cnn_default "$scratch/train.json" "$build/examples/train_cnn" --json "$scratch/train.json"
run copy_bandwidth "$scratch/copy.json" "$bench/copy_bandwidth" "${quick[@]}" --json "$scratch/copy.json"
run hint_overhead "$scratch/hint.json" "$bench/hint_overhead" "${quick[@]}" --json "$scratch/hint.json"
if [ "$form" = standard ]; then
  run plan_footprint "$scratch/plan.json" "$bench/plan_footprint" --mip-seconds 2 --json "$scratch/plan.json"
else
  run plan_footprint "$scratch/plan.json" "$bench/plan_footprint" "${quick[@]}" --json "$scratch/plan.json"
fi
run training_footprint "$scratch/footprint.json" "$bench/training_footprint" "${quick[@]}" \
  --json "$scratch/footprint.json"
# Every paper network with its Bayesian optimisation takes long: the
# standard form models two of them, the full form all.
if [ "$form" = full ]; then
  run autoswap_reproduction "$scratch/autoswap.json" "$bench/autoswap_reproduction" --json "$scratch/autoswap.json"
else
  run autoswap_reproduction "$scratch/autoswap.json" "$bench/autoswap_reproduction" --quick \
    --json "$scratch/autoswap.json"
fi
case "$form" in
  quick)
    run model_accuracy "$scratch/accuracy.json" "$bench/model_accuracy" --quick --models resnet \
      --profile-cache "$scratch/profiles.json" --json "$scratch/accuracy.json"
    run paper_reproduction "$scratch/reproduction.json" "$bench/paper_reproduction" --quick \
      --profile-cache "$scratch/profiles.json" --json "$scratch/reproduction.json" ;;
  standard)
    run model_accuracy "$scratch/accuracy.json" "$bench/model_accuracy" --models resnet \
      --profile-cache "$scratch/profiles.json" --json "$scratch/accuracy.json"
    run paper_reproduction "$scratch/reproduction.json" "$bench/paper_reproduction" --no-paper --models resnet \
      --fractions 0.2 --policies first-touch,ca-lm,ca-lma,autotm-sync,redl \
      --profile-cache "$scratch/profiles.json" --json "$scratch/reproduction.json" ;;
  full)
    run model_accuracy "$scratch/accuracy.json" "$bench/model_accuracy" \
      --profile-cache "$scratch/profiles.json" --json "$scratch/accuracy.json"
    run paper_reproduction "$scratch/reproduction.json" "$bench/paper_reproduction" \
      --profile-cache "$scratch/profiles.json" --json "$scratch/reproduction.json" ;;
esac
# The charts are drawn with Debian's matplotlib (python3-matplotlib).
/usr/bin/python3 tools/render_results.py render
