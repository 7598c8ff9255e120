// hint_overhead: what the access layer and the data manager cost per call,
// against the baselines a reader knows (docs/design.md "Benchmarks": the baseline
// is measured in the same run and the ratio printed).
//
//   (a) a read() guard (hint + pin + resolve, then unpin) on a resident
//       array, and a write() guard (hint + dirty + pin, then unpin)
//   (b) one will_read() hint on a resident array
//   (c) rt.kernel(...) with an empty body, 1 and 3 arguments
//   (d) DataManager allocate + free on a DRAM heap holding 10,000 live
//       regions of 64 B .. 64 KiB: median and p99 of per-batch averages
//   (e) read() guards per second from 1, 2 and 4 threads (and all the cores
//       when there are more), each on a resident array of its own, then all
//       on one shared array, under CA:LM (runtime_from_environment's default)
//   (f) kernels that write (one argument read, one written) per second from
//       1, 2 and 4 threads, each on resident arrays of its own, of 4 KiB and
//       of 256 KiB, under CA:LM
//   (g) the kernel of 3 arguments under first touch written as a user's
//       policy, whose hints reach it under the runtime's lock (a user's
//       policy's default), and how long each call holds the lock (Stats::lock)
//   baselines: an uncontended std::mutex lock+unlock pair; malloc+free of the
//   same sizes with as many live blocks; one thread's guards per second.
//
// Goals, as ratios to the baselines of the same run (an absolute goal in ns
// would say more about the machine than about the code): guard <= 1.5x
// mutex, write guard <= 1.5x mutex, hint <= 1.1x mutex, kernel of 3
// arguments <= 3x mutex, allocate+free <= 2x malloc+free; 2 threads >= 1.8x
// one thread's guards per second on distinct arrays and >= 1.5x on one
// shared array; 2 threads >= 1.8x one thread's writing kernels per second,
// at either size.
//
//   hint_overhead [--quick] [--json FILE]
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
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
  double read_guard_ns, write_guard_ns, hint_ns, kernel1_ns, kernel3_ns, mutex_ns;
  // (g): the same kernel of 3 arguments under a policy whose hints go under
  // the lock, and how long each of its calls held the lock (Stats::lock, a
  // sample of the calls).
  double locked_kernel3_ns, locked_section_ns;
};

// First touch as a user would write it, overriding only what a policy must:
// its hints reach it under the runtime's lock, as every user's policy's do
// by default (Policy::read_hint_delivery). Against the first-touch runs
// above, only the path through the lock differs.
class FirstTouchOfAUser : public ca::policy::Policy {
 public:
  [[nodiscard]] std::string name() const override { return "first touch of a user"; }
  [[nodiscard]] bool follows_kernels() const override { return false; }
  [[nodiscard]] bool place(ca::Object& object) override {
    for (ca::DeviceId d = 0; d < manager().device_count(); ++d) {
      if (ca::Region* region = manager().allocate(d, object.bytes())) {
        manager().setprimary(object, *region);
        return true;
      }
    }
    return false;
  }
};

// A kernel over two arrays read and one written, with an empty body.
void empty_kernel3(ca::Runtime& rt, ca::CachedArray<float>& x, ca::CachedArray<float>& y, ca::CachedArray<float>& z) {
  rt.kernel(ca::reads(x, y), ca::writes(z), [](std::span<const float> a, std::span<const float> b, std::span<float> c) {
    keep(a.data());
    keep(b.data());
    keep(c.data());
  });
}

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
  t.write_guard_ns = ns_per_call(e.iterations, e.runs, [&] {
    auto w = y.write();
    keep(w.data());
  });
  t.hint_ns = ns_per_call(e.iterations, e.runs, [&] { x.will_read(); });
  t.kernel1_ns = ns_per_call(e.iterations, e.runs,
                             [&] { rt.kernel(ca::reads(x), [](std::span<const float> a) { keep(a.data()); }); });
  t.kernel3_ns = ns_per_call(e.iterations, e.runs, [&] { empty_kernel3(rt, x, y, z); });
  {
    ca::Runtime locked{{ca::dram(64ull << 20, "dram"), ca::dax_file({}, 64ull << 20, "dax")},
                       std::make_unique<FirstTouchOfAUser>()};
    auto lx = locked.array<float>(1024);
    auto ly = locked.array<float>(1024);
    auto lz = locked.array<float>(1024);
    const ca::Stats before = locked.stats();
    t.locked_kernel3_ns = ns_per_call(e.iterations, e.runs, [&] { empty_kernel3(locked, lx, ly, lz); });
    t.locked_section_ns = locked.stats().since(before).lock.mean_held_ns();
  }
  std::mutex mutex;
  t.mutex_ns = ns_per_call(e.iterations, e.runs, [&] {
    mutex.lock();
    mutex.unlock();
  });
  return t;
}

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

// (e), (f): calls per second from `threads` threads for `seconds`, thread t
// calling call(t) in a loop.
template <typename Call>
double calls_per_second(int threads, double seconds, Call&& call) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int k = 0; k < 256; ++k) call(t);
        n += 256;
      }
      counts[static_cast<std::size_t>(t)] = n;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::uint64_t total = 0;
  for (std::uint64_t n : counts) total += n;
  return static_cast<double>(total) / took;
}

// What a row of (e) or (f) measures.
enum class ThreadWork { read_guard, write_kernel };

struct ThreadRow {
  ThreadWork work = ThreadWork::read_guard;
  std::uint64_t array_bytes = 0;
  int threads = 0;
  bool shared = false;
  double calls_per_second = 0;
  double vs_one = 0;  // over one thread's rate of the same work and size, measured in the same run
};

std::vector<ThreadRow> measure_threads(bool quick) {
  ca::Runtime rt{{ca::dram(256ull << 20, "dram"), ca::dax_file({}, 256ull << 20, "dax")},
                 std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)};
  // 1, 2 and 4 threads (more than cores shows what oversubscription costs),
  // and all the cores when there are more.
  std::vector<int> counts{1, 2, 4};
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores > counts.back()) counts.push_back(cores);
  // Each thread's arrays: one to read and one to write, of each size.
  constexpr std::uint64_t small = 4096, large = 256 * 1024;
  std::map<std::uint64_t, std::vector<std::pair<ca::CachedArray<float>, ca::CachedArray<float>>>> arrays;
  for (const std::uint64_t bytes : {small, large}) {
    for (int t = 0; t < counts.back(); ++t) {
      arrays[bytes].emplace_back(rt.array<float>(bytes / sizeof(float)), rt.array<float>(bytes / sizeof(float)));
    }
  }
  const double seconds = quick ? 0.05 : 0.3;
  const int runs = quick ? 1 : 5;
  std::vector<ThreadRow> rows;
  for (bool shared : {false, true}) {
    for (int threads : counts) rows.push_back({ThreadWork::read_guard, small, threads, shared, 0, 0});
  }
  for (const std::uint64_t bytes : {small, large}) {
    for (int threads : counts) rows.push_back({ThreadWork::write_kernel, bytes, threads, false, 0, 0});
  }
  const auto measure = [&](const ThreadRow& row) {
    auto& own = arrays.at(row.array_bytes);
    if (row.work == ThreadWork::read_guard) {
      return calls_per_second(row.threads, seconds, [&](int t) {
        auto r = own[row.shared ? 0 : static_cast<std::size_t>(t)].first.read();
        keep(r.data());
      });
    }
    return calls_per_second(row.threads, seconds, [&](int t) {
      auto& [in, out] = own[static_cast<std::size_t>(t)];
      rt.kernel(ca::reads(in), ca::writes(out), [](std::span<const float> a, std::span<float> b) { b[0] = a[0]; });
    });
  };
  // Median of runs, the rows taking turns run by run, so that a slow phase
  // of the machine falls on all of them.
  std::vector<std::vector<double>> samples(rows.size());
  for (int r = 0; r < runs; ++r) {
    for (std::size_t i = 0; i < rows.size(); ++i) samples[i].push_back(measure(rows[i]));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].calls_per_second = bench::median(samples[i]);
  for (ThreadRow& row : rows) {
    for (const ThreadRow& one : rows) {
      if (one.threads == 1 && !one.shared && one.work == row.work && one.array_bytes == row.array_bytes) {
        row.vs_one = one.calls_per_second > 0 ? row.calls_per_second / one.calls_per_second : 0;
      }
    }
  }
  return rows;
}

// The goals, as ratios to the same run's baselines.
struct Goals {
  static constexpr double guard_vs_mutex = 1.5;
  static constexpr double write_guard_vs_mutex = 1.5;
  static constexpr double hint_vs_mutex = 1.1;
  static constexpr double kernel3_vs_mutex = 3.0;
  static constexpr double alloc_vs_malloc = 2.0;
  static constexpr double two_threads_distinct = 1.8;
  static constexpr double two_threads_shared = 1.5;
  static constexpr double two_threads_writing = 1.8;
};

const ThreadRow* two_threads(const std::vector<ThreadRow>& rows, ThreadWork work, bool shared,
                             std::uint64_t bytes = 4096) {
  for (const ThreadRow& row : rows) {
    if (row.threads == 2 && row.work == work && row.shared == shared && row.array_bytes == bytes) return &row;
  }
  return nullptr;
}

std::string work_name(ThreadWork work) {
  return work == ThreadWork::read_guard ? "read() guard" : "kernel, 1 read 1 written";
}

void report_threads(const std::vector<ThreadRow>& rows) {
  fmt::print("\ncalls per second, CA:LM, each thread in a loop on resident arrays\n\n");
  const bench::Table table({{"work", 26, bench::Align::left},
                            {"array", 10},
                            {"threads", 8},
                            {"arrays", 9, bench::Align::left},
                            {"calls/s", 12},
                            {"x one thread", 13},
                            {"goal", 7}});
  table.print_header();
  table.print_rule();
  for (const ThreadRow& row : rows) {
    const char* goal = row.threads != 2                       ? ""
                       : row.work == ThreadWork::write_kernel ? ">= 1.8"
                       : row.shared                           ? ">= 1.5"
                                                              : ">= 1.8";
    table.print_row({work_name(row.work), ca::format_bytes(row.array_bytes), fmt::format("{}", row.threads),
                     row.shared ? "one" : "distinct", fmt::format("{:.2f} M", row.calls_per_second / 1e6),
                     fmt::format("{:.2f}x", row.vs_one), goal});
  }
}

void report(bool quick, const Effort& e, const AccessTimes& a, const AllocateTimes& m) {
  fmt::print(
      "hint_overhead{}: {} calls x {} runs (median); allocate+free: {} batches of {}, "
      "{} live regions of {}..{} B\n\n",
      quick ? " --quick" : "", e.iterations, e.runs, e.batches, e.batch, m.live_regions, min_region, max_region);
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
  row("read() guard (hint+pin+unpin)", a.read_guard_ns, "<= 1.5x", "mutex lock+unlock", a.mutex_ns);
  row("write() guard (hint+dirty+pin+unpin)", a.write_guard_ns, "<= 1.5x", "mutex lock+unlock", a.mutex_ns);
  row("will_read() hint", a.hint_ns, "<= 1.1x", "mutex lock+unlock", a.mutex_ns);
  row("kernel, 1 argument", a.kernel1_ns, "", "mutex lock+unlock", a.mutex_ns);
  row("kernel, 3 arguments", a.kernel3_ns, "<= 3x", "mutex lock+unlock", a.mutex_ns);
  row("kernel, 3 arguments, under the lock", a.locked_kernel3_ns, "", "mutex lock+unlock", a.mutex_ns);
  row("  of which the lock is held", a.locked_section_ns, "", "mutex lock+unlock", a.mutex_ns);
  row("allocate+free, median batch", m.allocate_free.median, "<= 2x", "malloc+free median", m.malloc_free.median);
  row("allocate+free, p99 batch", m.allocate_free.p99, "", "malloc+free p99", m.malloc_free.p99);
  table.print_row({"std::mutex lock+unlock", ns(a.mutex_ns)});
  table.print_row({"malloc+free", ns(m.malloc_free.median)});
}

// One line per goal, each a ratio to a baseline of the same run.
void report_goals(const AccessTimes& a, const AllocateTimes& m, const std::vector<ThreadRow>& threads) {
  const auto line = [](const char* what, double ratio, const char* relation, double goal, bool met) {
    fmt::print("  {:<50} {:>6.2f}x  (goal {} {:.1f}x): {}\n", what, ratio, relation, goal, met ? "met" : "MISSED");
  };
  fmt::print("\ngoals:\n");
  line("read() guard / mutex", a.read_guard_ns / a.mutex_ns, "<=", Goals::guard_vs_mutex,
       a.read_guard_ns / a.mutex_ns <= Goals::guard_vs_mutex);
  line("write() guard / mutex", a.write_guard_ns / a.mutex_ns, "<=", Goals::write_guard_vs_mutex,
       a.write_guard_ns / a.mutex_ns <= Goals::write_guard_vs_mutex);
  line("will_read() hint / mutex", a.hint_ns / a.mutex_ns, "<=", Goals::hint_vs_mutex,
       a.hint_ns / a.mutex_ns <= Goals::hint_vs_mutex);
  line("kernel of 3 arguments / mutex", a.kernel3_ns / a.mutex_ns, "<=", Goals::kernel3_vs_mutex,
       a.kernel3_ns / a.mutex_ns <= Goals::kernel3_vs_mutex);
  const double alloc = m.allocate_free.median / m.malloc_free.median;
  line("allocate+free / malloc+free", alloc, "<=", Goals::alloc_vs_malloc, alloc <= Goals::alloc_vs_malloc);
  if (const ThreadRow* r = two_threads(threads, ThreadWork::read_guard, false)) {
    line("2 threads, distinct arrays / one thread", r->vs_one, ">=", Goals::two_threads_distinct,
         r->vs_one >= Goals::two_threads_distinct);
  }
  if (const ThreadRow* r = two_threads(threads, ThreadWork::read_guard, true)) {
    line("2 threads, one shared array / one thread", r->vs_one, ">=", Goals::two_threads_shared,
         r->vs_one >= Goals::two_threads_shared);
  }
  for (const std::uint64_t bytes : {4096ull, 256ull * 1024}) {
    if (const ThreadRow* r = two_threads(threads, ThreadWork::write_kernel, false, bytes)) {
      line(fmt::format("2 threads writing, {} arrays / one thread", ca::format_bytes(bytes)).c_str(), r->vs_one,
           ">=", Goals::two_threads_writing, r->vs_one >= Goals::two_threads_writing);
    }
  }
}

nlohmann::json to_json(bool quick, const AccessTimes& a, const AllocateTimes& m,
                       const std::vector<ThreadRow>& threads) {
  nlohmann::json thread_rows = nlohmann::json::array();
  for (const ThreadRow& r : threads) {
    thread_rows.push_back({{"work", r.work == ThreadWork::read_guard ? "read_guard" : "write_kernel"},
                           {"array_bytes", r.array_bytes},
                           {"threads", r.threads},
                           {"shared", r.shared},
                           {"calls_per_second", r.calls_per_second},
                           {"vs_one", r.vs_one}});
  }
  return {
      {"threads", thread_rows},
      {"hint_ns", a.hint_ns},
      {"read_guard_ns", a.read_guard_ns},
      {"write_guard_ns", a.write_guard_ns},
      {"kernel1_ns", a.kernel1_ns},
      {"kernel3_ns", a.kernel3_ns},
      {"locked_kernel3_ns", a.locked_kernel3_ns},
      {"locked_section_ns", a.locked_section_ns},
      {"alloc_free_ns", m.allocate_free.median},
      {"alloc_free_p99_ns", m.allocate_free.p99},
      {"alloc_free_ratio", m.allocate_free.median / m.malloc_free.median},
      {"alloc_free_p99_ratio", m.allocate_free.p99 / m.malloc_free.p99},
      {"mutex_ns", a.mutex_ns},
      {"malloc_free_ns", m.malloc_free.median},
      {"malloc_free_p99_ns", m.malloc_free.p99},
      {"live_regions", m.live_regions},
      {"quick", quick},
      {"goals",
       {{"read_guard_vs_mutex", Goals::guard_vs_mutex},
        {"hint_vs_mutex", Goals::hint_vs_mutex},
        {"kernel3_vs_mutex", Goals::kernel3_vs_mutex},
        {"alloc_free_vs_malloc_free", Goals::alloc_vs_malloc},
        {"two_threads_distinct_vs_one", Goals::two_threads_distinct},
        {"two_threads_shared_vs_one", Goals::two_threads_shared},
        {"write_guard_vs_mutex", Goals::write_guard_vs_mutex},
        {"two_threads_writing_vs_one", Goals::two_threads_writing}}},
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
  bench::print_machine_line();

  const Effort effort = quick ? Effort{100'000, 3, 200, 1000} : Effort{2'000'000, 7, 2000, 1000};
  const AccessTimes access = measure_access(effort);
  const AllocateTimes allocate = measure_allocate(effort);
  const std::vector<ThreadRow> threads = measure_threads(quick);
  report(quick, effort, access, allocate);
  report_threads(threads);
  report_goals(access, allocate, threads);
  if (!json_path.empty() && !bench::write_json(json_path, to_json(quick, access, allocate, threads), "hint_overhead")) {
    return 1;
  }
  return 0;
}
