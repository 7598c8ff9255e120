// What every benchmark here needs around its measurement: the statistics it
// reports (the median; a paired ratio over rounds with its interval,
// support/ratio_interval.hpp), the wall and CPU time it takes them from, the machine it
// ran on (machine_report.hpp), and, shared with the command-line tools
// (tools/support), a table a person can read, JSON a script can compare
// (docs/benchmarks.md), and running a helper script (the PyTorch
// baseline, the plot scripts).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "machine_report.hpp"
#include "support/json_file.hpp"
#include "support/ratio_interval.hpp"
#include "support/shell.hpp"
#include "support/table.hpp"

namespace cachedarrays::bench {

using Clock = std::chrono::steady_clock;

// A small seeded generator (splitmix64): the same choices on every run of a
// seed, and cheap enough to draw per operation.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

// The middle sample (the mean of the middle two for an even count): on a
// shared machine a disturbance only ever slows a sample down, and the median
// ignores the few that were.
inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

// Wall time of one call of `run`, in seconds.
template <typename F>
double seconds_of(F&& run) {
  const auto start = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds the whole machine spent busy (/proc/stat) and those this
// process and its waited-for children used: between two samples, the
// difference is what other processes took from a measurement.
struct CpuSample {
  double machine_busy = -1;  // -1: /proc/stat unreadable
  double ours = 0;
  Clock::time_point when;
};

inline CpuSample cpu_sample() {
  CpuSample t;
  t.when = Clock::now();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && cpu == "cpu") {
    t.machine_busy =
        static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  const auto seconds = [](const ::rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  ::rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  t.ours = seconds(self) + seconds(children);
  return t;
}

// Cores other processes kept busy on average between `from` and `to`.
inline double others_busy_cores(const CpuSample& from, const CpuSample& to) {
  const double wall = std::chrono::duration<double>(to.when - from.when).count();
  if (from.machine_busy < 0 || to.machine_busy < 0 || wall <= 0) return 0;
  return std::max(0.0, (to.machine_busy - from.machine_busy) - (to.ours - from.ours)) / wall;
}

// The table, the JSON file and the helper scripts are the command-line
// tools' as well (tools/support).
using tools::Align;
using tools::capture;
using tools::Column;
using tools::paired_ratio_interval;
using tools::RatioInterval;
using tools::shell_quote;
using tools::Table;

// `value` with the machine it was measured on: an object gets a "machine"
// member beside its own (so no benchmark names a member of its own so); a
// list of rows becomes {"machine": ..., "rows": [...]} (the scripts that
// read the rows accept both forms).
inline nlohmann::json with_machine(const nlohmann::json& value) {
  if (value.is_object()) {
    nlohmann::json out = value;
    out["machine"] = machine_json(machine_report());
    return out;
  }
  return {{"machine", machine_json(machine_report())}, {"rows", value}};
}

// Every benchmark's JSON, written with the machine it ran on.
inline bool write_json(const std::string& path, const nlohmann::json& value, std::string_view program) {
  return tools::write_json(path, with_machine(value), program);
}

}  // namespace cachedarrays::bench
