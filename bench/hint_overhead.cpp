// hint_overhead: what the access layer and the data manager cost per call,
// against the baselines a reader knows (docs/design.md "Benchmarks": the baseline
// is measured in the same run and the ratio printed).
//
//   (a) a read() guard (hint + pin + resolve, then unpin) on a resident array
//   (b) one will_read() hint on a resident array
//   (c) rt.kernel(...) with an empty body, 1 and 3 arguments
//   (d) DataManager allocate + free on a DRAM heap holding 10,000 live
//       regions of 64 B .. 64 KiB: median and p99 of per-batch averages
//   baselines: an uncontended std::mutex lock+unlock pair; malloc+free of the
//   same sizes with as many live blocks.
//
// Goals: hint and guard <= 50 ns; allocate+free <= 2.0x malloc+free of the
// same run (median batch).
//
//   hint_overhead [--quick] [--json FILE]
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>

#include "bench_support.hpp"

namespace ca = cachedarrays;
namespace bench = cachedarrays::bench;

namespace {

using bench::Clock;
using bench::Rng;

// Keeps a value alive and the loop around it from being optimised away.
template <typename T>
inline void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

// ns per call of `body`, as the median over `runs` runs of `iterations` calls
// (the median drops runs disturbed by the other processes of a shared box).
template <typename F>
double ns_per_call(std::uint64_t iterations, int runs, F&& body) {
  for (std::uint64_t i = 0; i < iterations / 10; ++i) body();  // warm up
  std::vector<double> per_run;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    for (std::uint64_t i = 0; i < iterations; ++i) body();
    const std::chrono::duration<double, std::nano> took = Clock::now() - start;
    per_run.push_back(took.count() / static_cast<double>(iterations));
  }
  return bench::median(per_run);
}

struct BatchTimes {
  double median = 0;
  double p99 = 0;
};

// Times `batches` batches of `batch` calls of pair(i); returns the median
// and the 99th percentile of the per-batch mean.
template <typename F>
BatchTimes batch_times(std::uint64_t batches, std::uint64_t batch, F&& pair) {
  std::vector<double> means;
  means.reserve(batches);
  std::uint64_t i = 0;
  for (std::uint64_t b = 0; b < batch; ++b) pair(i++);  // warm up
  for (std::uint64_t k = 0; k < batches; ++k) {
    const auto start = Clock::now();
    for (std::uint64_t b = 0; b < batch; ++b) pair(i++);
    const std::chrono::duration<double, std::nano> took = Clock::now() - start;
    means.push_back(took.count() / static_cast<double>(batch));
  }
  std::sort(means.begin(), means.end());
  const auto at = [&](double q) {
    return means[std::min(means.size() - 1, static_cast<std::size_t>(q * static_cast<double>(means.size())))];
  };
  return {at(0.5), at(0.99)};
}

constexpr std::uint64_t live_regions = 10000;
constexpr std::uint64_t min_region = 64;
constexpr std::uint64_t max_region = 64 * 1024;

std::vector<std::uint64_t> random_sizes(std::uint64_t count, std::uint64_t seed) {
  Rng rng{seed};
  std::vector<std::uint64_t> sizes(count);
  for (auto& s : sizes) s = min_region + rng.next() % (max_region - min_region + 1);
  return sizes;
}

// How long each measurement runs: --quick trades steadiness for time.
struct Effort {
  std::uint64_t iterations;  // calls per run
  int runs;
  std::uint64_t batches;  // allocate+free: batches of `batch` calls
  std::uint64_t batch;
};

// (a)-(c): the access layer on resident arrays, and the mutex baseline.
struct AccessTimes {
  double read_guard_ns, hint_ns, kernel1_ns, kernel3_ns, mutex_ns;
};

AccessTimes measure_access(const Effort& e) {
  ca::Runtime rt{{ca::dram(64ull << 20, "dram"), ca::dax_file({}, 64ull << 20, "dax")}};
  auto x = rt.array<float>(1024);
  auto y = rt.array<float>(1024);
  auto z = rt.array<float>(1024);
  AccessTimes t{};
  t.read_guard_ns = ns_per_call(e.iterations, e.runs, [&] {
    auto r = x.read();
    keep(r.data());
  });
  t.hint_ns = ns_per_call(e.iterations, e.runs, [&] { x.will_read(); });
  t.kernel1_ns = ns_per_call(e.iterations, e.runs, [&] {
    rt.kernel(ca::reads(x), [](std::span<const float> a) { keep(a.data()); });
  });
  t.kernel3_ns = ns_per_call(e.iterations, e.runs, [&] {
    rt.kernel(ca::reads(x, y), ca::writes(z),
              [](std::span<const float> a, std::span<const float> b, std::span<float> c) {
                keep(a.data());
                keep(b.data());
                keep(c.data());
              });
  });
  std::mutex mutex;
  t.mutex_ns = ns_per_call(e.iterations, e.runs, [&] {
    mutex.lock();
    mutex.unlock();
  });
  return t;
}

// allocate+free's goal: at most this many times malloc+free of the same
// run, as a ratio so that it holds on any machine.
constexpr double alloc_free_goal_ratio = 2.0;

// (d): allocate + free with 10,000 live regions, and malloc + free with as
// many live blocks.
struct AllocateTimes {
  BatchTimes allocate_free, malloc_free;
  std::uint64_t live_regions = 0;  // as the heap counted them
};

AllocateTimes measure_allocate(const Effort& e) {
  // A heap large enough for the live set, not prefaulted: allocate and free
  // only touch the allocator's bookkeeping, never the heap's pages.
  ca::DeviceSpec spec = ca::dram(1ull << 30, "dram");
  spec.prefault = false;
  std::vector<ca::DeviceSpec> specs;
  specs.push_back(std::move(spec));
  ca::DataManager dm(std::move(specs));
  const std::vector<std::uint64_t> live_sizes = random_sizes(live_regions, 1);
  std::vector<ca::Region*> live;
  for (std::uint64_t s : live_sizes) live.push_back(dm.allocate(0, s));
  // Free every third one so the heap has holes of every size, as a running
  // program's does, then fill back to 10,000 live regions.
  for (std::size_t i = 0; i < live.size(); i += 3) {
    dm.free(*live[i]);
    live[i] = nullptr;
  }
  const std::vector<std::uint64_t> refill = random_sizes(live_regions, 2);
  for (std::size_t i = 0, k = 0; i < live.size(); ++i) {
    if (live[i] == nullptr) live[i] = dm.allocate(0, refill[k++]);
  }
  const std::vector<std::uint64_t> sizes = random_sizes(4096, 3);
  AllocateTimes t;
  t.allocate_free = batch_times(e.batches, e.batch, [&](std::uint64_t i) {
    ca::Region* r = dm.allocate(0, sizes[i & 4095]);
    keep(r);
    dm.free(*r);
  });

  std::vector<void*> live_blocks;
  for (std::uint64_t s : live_sizes) live_blocks.push_back(std::malloc(s));
  t.malloc_free = batch_times(e.batches, e.batch, [&](std::uint64_t i) {
    void* p = std::malloc(sizes[i & 4095]);
    keep(p);
    std::free(p);
  });
  for (void* p : live_blocks) std::free(p);
  t.live_regions = dm.usage(0).live_regions;
  for (ca::Region* r : live) dm.free(*r);
  return t;
}

void report(bool quick, const Effort& e, const AccessTimes& a, const AllocateTimes& m) {
  fmt::print("hint_overhead{}: {} calls x {} runs (median); allocate+free: {} batches of {}, "
             "{} live regions of {}..{} B\n\n",
             quick ? " --quick" : "", e.iterations, e.runs, e.batches, e.batch, m.live_regions, min_region,
             max_region);
  const bench::Table table({{"measurement", 34, bench::Align::left},
                            {"ns/op", 9},
                            {"goal", 7},
                            {"baseline", 20, bench::Align::left},
                            {"ns/op", 9},
                            {"ratio", 8}});
  table.print_header();
  table.print_rule();
  const auto ns = [](double x) { return fmt::format("{:.1f}", x); };
  const auto row = [&](const char* what, double x, const char* goal, const char* base_name, double base) {
    table.print_row({what, ns(x), goal, base_name, ns(base), fmt::format("{:.2f}x", x / base)});
  };
  row("read() guard (hint+pin+unpin)", a.read_guard_ns, "<= 50", "mutex lock+unlock", a.mutex_ns);
  row("will_read() hint", a.hint_ns, "<= 50", "mutex lock+unlock", a.mutex_ns);
  row("kernel, 1 argument", a.kernel1_ns, "", "mutex lock+unlock", a.mutex_ns);
  row("kernel, 3 arguments", a.kernel3_ns, "", "mutex lock+unlock", a.mutex_ns);
  row("allocate+free, median batch", m.allocate_free.median, "<= 2.0x", "malloc+free median", m.malloc_free.median);
  row("allocate+free, p99 batch", m.allocate_free.p99, "", "malloc+free p99", m.malloc_free.p99);
  table.print_row({"std::mutex lock+unlock", ns(a.mutex_ns)});
  table.print_row({"malloc+free", ns(m.malloc_free.median)});
  const bool hint_ok = a.hint_ns <= 50 && a.read_guard_ns <= 50;
  const double alloc_ratio = m.allocate_free.median / m.malloc_free.median;
  const bool alloc_ok = alloc_ratio <= alloc_free_goal_ratio;
  fmt::print("\ngoals: hint and guard <= 50 ns: {}; allocate+free <= {:.1f}x malloc+free: {} ({:.2f}x)\n",
             hint_ok ? "met" : "MISSED", alloc_free_goal_ratio, alloc_ok ? "met" : "MISSED", alloc_ratio);
}

nlohmann::json to_json(bool quick, const AccessTimes& a, const AllocateTimes& m) {
  return {
      {"hint_ns", a.hint_ns},
      {"read_guard_ns", a.read_guard_ns},
      {"kernel1_ns", a.kernel1_ns},
      {"kernel3_ns", a.kernel3_ns},
      {"alloc_free_ns", m.allocate_free.median},
      {"alloc_free_p99_ns", m.allocate_free.p99},
      {"alloc_free_ratio", m.allocate_free.median / m.malloc_free.median},
      {"alloc_free_p99_ratio", m.allocate_free.p99 / m.malloc_free.p99},
      {"mutex_ns", a.mutex_ns},
      {"malloc_free_ns", m.malloc_free.median},
      {"malloc_free_p99_ns", m.malloc_free.p99},
      {"live_regions", m.live_regions},
      {"quick", quick},
      {"goals", {{"hint_ns", 50}, {"read_guard_ns", 50}, {"alloc_free_ratio", alloc_free_goal_ratio}}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hint_overhead: cost of hints, scoped accesses, kernels and allocate+free"};
  bool quick = false;
  std::string json_path;
  app.add_flag("--quick", quick, "a fast smoke run (fewer iterations; noisier numbers)");
  app.add_option("--json", json_path, "also write the results to this JSON file");
  CLI11_PARSE(app, argc, argv);

  const Effort effort = quick ? Effort{100'000, 3, 200, 1000} : Effort{2'000'000, 7, 2000, 1000};
  const AccessTimes access = measure_access(effort);
  const AllocateTimes allocate = measure_allocate(effort);
  report(quick, effort, access, allocate);
  if (!json_path.empty() && !bench::write_json(json_path, to_json(quick, access, allocate), "hint_overhead")) return 1;
  return 0;
}
