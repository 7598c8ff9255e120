// copy_bandwidth: how fast DataManager::copyto moves a region between tiers,
// against the two baselines a reader would reach for, measured in the same
// run on the same buffers (docs/benchmarks.md):
//   memcpy  std::memcpy (with 2 threads: two halves run by tbb::parallel_for)
//   NT      a plain non-temporal copy, detail::copy_nontemporal (split the same way)
// ratio = copyto / max(memcpy, NT); the goal is >= 0.95 for regions >= 64 MiB.
// copyto's stores are the copy engine's measured choice (or CACHEDARRAYS_COPY's):
// the header prints it per size band with the figures it rests on, and the
// JSON holds it as "copy_path".
//
// Directions DRAM->DAX, DAX->DRAM, DRAM->DRAM; sizes 4 KiB .. 1 GiB; 1 and 2
// threads (tbb::global_control caps oneTBB, which copyto's engine uses).
// --tuning-sweep also measures the copy engine itself, serially and on 2
// threads with several chunk sizes, for sizes 256 KiB .. 64 MiB: the numbers
// that chose detail::CopyTuning's defaults (parallel_threshold, chunk_bytes).
//
//   copy_bandwidth [--max-bytes 1GiB] [--quick] [--json FILE] [--tuning-sweep]
//                  [--statistic best|median]
#include <fmt/format.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <cachedarrays/heap/device_spec.hpp>
#include <cachedarrays/manager/copy_path.hpp>
#include <cachedarrays/manager/data_manager.hpp>
#include <cachedarrays/runtime/environment.hpp>

#include "bench_support.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "support/copy_path_json.hpp"

namespace ca = cachedarrays;
namespace detail = cachedarrays::detail;
namespace bench = cachedarrays::bench;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

struct Effort {
  double min_seconds;  // per variant, summed over its samples
  int min_samples;
  double sample_seconds;  // small copies are batched into samples this long
  bool best;              // report the best sample, else the median
};

std::string human(std::uint64_t bytes) {
  if (bytes >= GiB && bytes % GiB == 0) return fmt::format("{} GiB", bytes / GiB);
  if (bytes >= MiB && bytes % MiB == 0) return fmt::format("{} MiB", bytes / MiB);
  if (bytes >= KiB && bytes % KiB == 0) return fmt::format("{} KiB", bytes / KiB);
  return fmt::format("{} B", bytes);
}

double seconds_of(const std::function<void()>& run, std::uint64_t iterations) {
  return bench::seconds_of([&] {
    for (std::uint64_t i = 0; i < iterations; ++i) run();
  });
}

// GB/s (1e9 bytes/s) of each variant: the best or the median sample. The
// variants take turns sample by sample, so that a slow phase of the machine
// hits all of them alike instead of whichever happened to run then. The best
// is the default because on a shared machine every disturbance only ever
// slows a sample down: the fastest one is the closest to what the copy
// itself costs.
std::vector<double> measure(const std::vector<std::function<void()>>& variants, std::uint64_t bytes,
                            const Effort& effort) {
  // One untimed run each touches every page and wakes the worker threads.
  std::vector<std::uint64_t> batch;
  for (const auto& run : variants) {
    run();
    const double once = std::max(seconds_of(run, 1), 1e-9);
    batch.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(effort.sample_seconds / once)));
  }
  std::vector<std::vector<double>> rates(variants.size());
  std::vector<double> spent(variants.size(), 0.0);
  const auto done = [&] {
    for (std::size_t v = 0; v < variants.size(); ++v)
      if (spent[v] < effort.min_seconds || static_cast<int>(rates[v].size()) < effort.min_samples) return false;
    return true;
  };
  while (!done()) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      const double t = seconds_of(variants[v], batch[v]);
      spent[v] += t;
      rates[v].push_back(static_cast<double>(bytes) * static_cast<double>(batch[v]) / t / 1e9);
    }
  }
  std::vector<double> result;
  for (const auto& r : rates) result.push_back(effort.best ? *std::max_element(r.begin(), r.end()) : bench::median(r));
  return result;
}

// `copy` over `threads` contiguous parts whose boundaries are whole cache
// lines, as a programmer would split a copy by hand.
void split_copy(int threads, std::byte* dst, const std::byte* src, std::uint64_t bytes,
                void (*copy)(std::byte*, const std::byte*, std::uint64_t)) {
  if (threads <= 1) {
    copy(dst, src, bytes);
    return;
  }
  const auto parts = static_cast<std::uint64_t>(threads);
  const std::uint64_t part = bytes / parts / 64 * 64;
  tbb::parallel_for(
      std::uint64_t{0}, parts,
      [&](std::uint64_t i) {
        const std::uint64_t begin = i * part;
        const std::uint64_t end = i + 1 == parts ? bytes : begin + part;
        copy(dst + begin, src + begin, end - begin);
      },
      tbb::static_partitioner{});
}

void plain_memcpy(std::byte* dst, const std::byte* src, std::uint64_t bytes) { std::memcpy(dst, src, bytes); }
void plain_nontemporal(std::byte* dst, const std::byte* src, std::uint64_t bytes) {
  detail::copy_nontemporal(dst, src, bytes);
}

// The share of the machine's CPU time that other processes used since
// `start`. On a shared machine a 2-thread copy needs the second core free;
// this says how far a row could be trusted.
double other_load(const bench::CpuSample& start) {
  const auto cpus = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return std::clamp(bench::others_busy_cores(start, bench::cpu_sample()) / cpus, 0.0, 1.0);
}

struct Direction {
  const char* name;
  ca::DeviceId src;
  ca::DeviceId dst;
  int src_slot;  // which of the two DRAM regions, when on DRAM
  int dst_slot;
};

constexpr ca::DeviceId dram_device = 0;
constexpr ca::DeviceId dax_device = 1;
constexpr Direction directions[] = {
    {"DRAM->DAX", dram_device, dax_device, 0, 0},
    {"DAX->DRAM", dax_device, dram_device, 0, 1},
    {"DRAM->DRAM", dram_device, dram_device, 0, 1},
};

// The regions of one size: two on DRAM (so DRAM->DRAM has a source and a
// destination) and one on DAX, each written once so every page is touched.
class Regions {
 public:
  Regions(ca::DataManager& manager, std::uint64_t bytes) : manager_(manager) {
    dram_[0] = take(dram_device, bytes, 1);
    dram_[1] = take(dram_device, bytes, 2);
    dax_ = take(dax_device, bytes, 3);
  }
  ~Regions() {
    manager_.free(*dax_);
    manager_.free(*dram_[1]);
    manager_.free(*dram_[0]);
  }
  Regions(const Regions&) = delete;
  Regions& operator=(const Regions&) = delete;

  ca::Region& get(ca::DeviceId device, int slot) { return device == dax_device ? *dax_ : *dram_[slot]; }

 private:
  // Each region gets its own non-repeating contents, so that verify_copyto
  // would notice a piece copied to the wrong place.
  ca::Region* take(ca::DeviceId device, std::uint64_t bytes, std::uint64_t seed) {
    ca::Region* region = manager_.allocate(device, bytes);
    if (region == nullptr) {
      throw std::runtime_error(
          fmt::format("copy_bandwidth: no room for {} on {}", human(bytes), manager_.spec(device).display_name()));
    }
    std::byte* p = manager_.pointer(*region);
    std::uint64_t word = seed * 0x9E3779B97F4A7C15ull;
    for (std::uint64_t at = 0; at < bytes; at += sizeof word) {
      word = word * 6364136223846793005ull + 1442695040888963407ull;
      std::memcpy(p + at, &word, std::min<std::uint64_t>(sizeof word, bytes - at));
    }
    return region;
  }

  ca::DataManager& manager_;
  ca::Region* dram_[2] = {nullptr, nullptr};
  ca::Region* dax_ = nullptr;
};

struct Row {
  std::string direction;
  std::uint64_t bytes;
  int threads;
  double copyto_gbps, memcpy_gbps, nontemporal_gbps, ratio;
  double other_load;  // share of the machine other processes used meanwhile
};

// copyto must produce an exact copy; a benchmark of a wrong copy means nothing.
void verify_copyto(ca::DataManager& manager, ca::Region& dst, const ca::Region& src, std::uint64_t bytes) {
  std::memset(manager.pointer(dst), 0x5A, bytes);
  manager.copyto(dst, src);
  if (std::memcmp(manager.pointer(dst), manager.pointer(src), bytes) != 0) {
    throw std::runtime_error("copy_bandwidth: copyto produced a wrong copy of " + human(bytes));
  }
}

std::vector<Row> run_copyto(ca::DataManager& manager, const std::vector<std::uint64_t>& sizes, const Effort& effort) {
  std::vector<Row> rows;
  const bench::Table table({{"direction", 11, bench::Align::left},
                            {"size", 8},
                            {"threads", 7},
                            {"copyto GB/s", 11},
                            {"memcpy GB/s", 11},
                            {"NT GB/s", 11},
                            {"ratio", 7},
                            {"other%", 7}});
  table.print_header();
  for (const std::uint64_t bytes : sizes) {
    Regions regions(manager, bytes);
    for (const Direction& d : directions) {
      ca::Region& src = regions.get(d.src, d.src_slot);
      ca::Region& dst = regions.get(d.dst, d.dst_slot);
      std::byte* dst_ptr = manager.pointer(dst);
      const std::byte* src_ptr = manager.pointer(src);
      verify_copyto(manager, dst, src, bytes);
      for (const int threads : {1, 2}) {
        const tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                        static_cast<std::size_t>(threads));
        const bench::CpuSample start = bench::cpu_sample();
        const std::vector<double> gbps = measure(
            {[&] { manager.copyto(dst, src); }, [&] { split_copy(threads, dst_ptr, src_ptr, bytes, plain_memcpy); },
             [&] { split_copy(threads, dst_ptr, src_ptr, bytes, plain_nontemporal); }},
            bytes, effort);
        const double ratio = gbps[0] / std::max(gbps[1], gbps[2]);
        const Row row{d.name, bytes, threads, gbps[0], gbps[1], gbps[2], ratio, other_load(start)};
        table.print_row({row.direction, human(row.bytes), std::to_string(row.threads),
                         fmt::format("{:.2f}", row.copyto_gbps), fmt::format("{:.2f}", row.memcpy_gbps),
                         fmt::format("{:.2f}", row.nontemporal_gbps), fmt::format("{:.2f}", row.ratio),
                         fmt::format("{:.0f}%", 100 * row.other_load)});
        std::fflush(stdout);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

// The copy engine over a grid of tunings, on the same regions: serially
// (max_threads 1) and split into chunks of each size on 2 threads, to the
// fast tier (memcpy) and to the slow tier (streaming stores).
void run_tuning_sweep(ca::DataManager& manager, const std::vector<std::uint64_t>& sizes, const Effort& effort) {
  const std::vector<std::uint64_t> chunks = {128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB, 4 * MiB};
  fmt::print("\ntuning sweep: copy_bytes GB/s ({}), serial vs 2 threads by chunk size\n",
             effort.best ? "best" : "median");
  std::vector<bench::Column> columns{{"destination", 11, bench::Align::left}, {"size", 8}, {"serial", 8}};
  for (const std::uint64_t chunk : chunks) columns.push_back({human(chunk), 9});
  const bench::Table table(std::move(columns));
  table.print_header();
  for (const std::uint64_t bytes : sizes) {
    Regions regions(manager, bytes);
    for (const auto where : {detail::CopyDestination::fast, detail::CopyDestination::slow}) {
      const bool fast = where == detail::CopyDestination::fast;
      std::byte* dst = manager.pointer(regions.get(fast ? dram_device : dax_device, 1));
      const std::byte* src = manager.pointer(regions.get(dram_device, 0));
      std::vector<std::function<void()>> variants;
      variants.emplace_back([=] { detail::copy_bytes(dst, src, bytes, where, detail::CopyTuning{.max_threads = 1}); });
      for (const std::uint64_t chunk : chunks) {
        variants.emplace_back([=] {
          detail::copy_bytes(
              dst, src, bytes, where,
              detail::CopyTuning{.parallel_threshold = 0, .chunk_bytes = chunk, .max_threads = 2, .split = true});
        });
      }
      const std::vector<double> gbps = measure(variants, bytes, effort);
      std::vector<std::string> cells{fast ? "fast/DRAM" : "slow/DAX", human(bytes)};
      for (const double g : gbps) cells.push_back(fmt::format("{:.2f}", g));
      table.print_row(cells);
      std::fflush(stdout);
    }
  }
}

struct Options {
  std::uint64_t max_bytes = GiB;
  bool quick = false;
  bool sweep = false;
  std::string json_path;
  std::string statistic = "best";
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--max-bytes", o.max_bytes, "largest region to copy (e.g. 256MiB)")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--quick", o.quick, "stop at 16 MiB and take few samples (smoke test)");
  app.add_option("--json", o.json_path, "also write the rows as a JSON array to this file");
  app.add_flag("--tuning-sweep", o.sweep, "also measure the copy engine over thresholds and chunk sizes");
  app.add_option("--statistic", o.statistic, "which sample to report per variant")
      ->check(CLI::IsMember({"best", "median"}));
}

// The sizes of `all` up to `max_bytes`.
std::vector<std::uint64_t> up_to(std::uint64_t max_bytes, std::initializer_list<std::uint64_t> all) {
  std::vector<std::uint64_t> kept;
  for (const std::uint64_t s : all)
    if (s <= max_bytes) kept.push_back(s);
  return kept;
}

std::string band_sizes(const ca::CopyBandReport& b) {
  return b.end_bytes == 0 ? ">= " + human(b.min_bytes) : human(b.min_bytes) + " .. <" + human(b.end_bytes);
}

std::string gbps_cell(double gbps) { return gbps > 0 ? fmt::format("{:.2f}", gbps) : "-"; }

// What copyto copies with in each size band, the calibration's figures for
// each candidate, and why the chooser took what it took.
void print_copy_path() {
  const ca::CopyPathReport& r = ca::copy_path_report();
  fmt::print("  copy path (CACHEDARRAYS_COPY={}): {}\n", r.mode, r.summary());
  if (r.mode == "auto") {
    fmt::print("    measured in {:.1f} ms over {} copied{}{}; GB/s of each candidate per band:\n",
               r.calibration_seconds * 1e3, human(r.calibration_bytes), r.calibration_note.empty() ? "" : "; ",
               r.calibration_note);
  }
  const bench::Table table({{"band", 6, bench::Align::left},
                            {"sizes", 17, bench::Align::left},
                            {"chosen", 12, bench::Align::left},
                            {"memcpy", 7},
                            {"NT", 7},
                            {"memcpy 2+", 9},
                            {"NT 2+", 7},
                            {"why", 4, bench::Align::left, 2}},
                           "    ");
  table.print_header();
  for (const ca::CopyBandReport& b : r.bands) {
    table.print_row({b.band, band_sizes(b), b.split ? b.split_path + " split" : b.path, gbps_cell(b.memcpy_gbps),
                     gbps_cell(b.nontemporal_gbps), gbps_cell(b.memcpy_split_gbps), gbps_cell(b.nontemporal_split_gbps),
                     b.why});
  }
  fmt::print("    below {} a copy is one memcpy; into real pmem it is libpmem's, whatever the band says\n",
             human(r.always_memcpy_below));
}

void print_setup(ca::DataManager& manager, const Options& o, const Effort& effort) {
  const detail::CopyTuning defaults;
  fmt::print("copy_bandwidth: DataManager::copyto vs std::memcpy vs a plain non-temporal copy\n");
  fmt::print("  DRAM heap: {}\n", manager.describe(dram_device));
  fmt::print("  DAX heap:  {}\n", manager.describe(dax_device));
  fmt::print("  DAX is pmem: {}{}\n", manager.is_pmem(dax_device) ? "yes" : "no",
             manager.is_pmem(dax_device) ? ""
                                         : " (an ordinary file in /dev/shm, i.e. DRAM: copies to it use "
                                           "streaming stores, not libpmem)");
  fmt::print("  non-temporal vector path: {}; CopyTuning defaults: parallel_threshold {}, chunk_bytes {}\n",
             detail::nontemporal_path(), human(defaults.parallel_threshold), human(defaults.chunk_bytes));
  print_copy_path();
  fmt::print(
      "  GB/s = 1e9 bytes/s, the {} of >= {} samples and >= {:.0f} ms per variant; "
      "variants interleaved sample by sample\n",
      o.statistic, effort.min_samples, effort.min_seconds * 1e3);
  fmt::print(
      "  ratio = copyto / max(memcpy, NT); other% = CPU share other processes used during the row "
      "(a 2-thread row needs the second core free)\n\n");
}

// The rows of at least goal_bytes, where copyto should reach goal_ratio of
// the best baseline.
constexpr std::uint64_t goal_bytes = 64 * MiB;
constexpr double goal_ratio = 0.95;

void print_goal(const std::vector<Row>& rows) {
  const Row* worst = nullptr;
  int counted = 0;
  for (const Row& r : rows) {
    if (r.bytes < goal_bytes) continue;
    ++counted;
    if (worst == nullptr || r.ratio < worst->ratio) worst = &r;
  }
  fmt::print("\ngoal: copyto >= {:.2f} of the best copy in every row >= {}: ", goal_ratio, human(goal_bytes));
  if (worst == nullptr) {
    fmt::print("no such row (raise --max-bytes)\n");
    return;
  }
  fmt::print("{} ({} rows; lowest ratio {:.2f}, {} {} {} thread{})\n", worst->ratio >= goal_ratio ? "met" : "MISSED",
             counted, worst->ratio, worst->direction, human(worst->bytes), worst->threads,
             worst->threads == 1 ? "" : "s");
}

nlohmann::json to_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    out.push_back({{"direction", r.direction},
                   {"bytes", r.bytes},
                   {"threads", r.threads},
                   {"copyto_gbps", r.copyto_gbps},
                   {"memcpy_gbps", r.memcpy_gbps},
                   {"nontemporal_gbps", r.nontemporal_gbps},
                   {"ratio", r.ratio},
                   {"other_cpu_share", r.other_load}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bandwidth of DataManager::copyto against memcpy and a non-temporal copy"};
  Options options;
  add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    // CACHEDARRAYS_COPY and _NT_ISA, which no Runtime reads here: the
    // benchmark copies through a bare DataManager.
    ca::apply_process_environment();
  } catch (const ca::error& e) {
    fmt::print(stderr, "copy_bandwidth: {}\n", e.what());
    return EXIT_FAILURE;
  }
  bench::print_machine_line();

  if (options.quick) options.max_bytes = std::min(options.max_bytes, 16 * MiB);
  const std::vector<std::uint64_t> sizes =
      up_to(options.max_bytes, {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1 * GiB});
  const std::vector<std::uint64_t> sweep_sizes =
      options.sweep
          ? up_to(options.max_bytes, {256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 64 * MiB})
          : std::vector<std::uint64_t>{};
  if (sizes.empty()) {
    fmt::print(stderr, "copy_bandwidth: --max-bytes {} is below the smallest size, 4 KiB\n", options.max_bytes);
    return EXIT_FAILURE;
  }
  const bool best = options.statistic == "best";
  const Effort effort = options.quick ? Effort{0.005, 3, 0.001, best} : Effort{0.05, 5, 0.002, best};

  // Room for the largest size twice on DRAM and once on DAX, plus slack for
  // the allocator's alignment.
  const std::uint64_t largest = std::max(sizes.back(), sweep_sizes.empty() ? std::uint64_t{0} : sweep_sizes.back());
  ca::DataManager manager({ca::dram(2 * largest + 4 * MiB, "dram"), ca::dax_file({}, largest + 4 * MiB, "dax")});
  print_setup(manager, options, effort);

  const std::vector<Row> rows = run_copyto(manager, sizes, effort);
  if (options.sweep) run_tuning_sweep(manager, sweep_sizes, effort);
  print_goal(rows);
  const nlohmann::json document = {{"copy_path", ca::tools::copy_path_json<nlohmann::json>(ca::copy_path_report())},
                                   {"rows", to_json(rows)}};
  if (!options.json_path.empty() && !bench::write_json(options.json_path, document, "copy_bandwidth")) {
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
