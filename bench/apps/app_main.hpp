// What every app under bench/apps shares: its flags, the runtime the
// environment describes, the warm-up / recorded / timed iterations, the
// check against a plain computation, and the one line (and the JSON) that
// reports a run. Written as a user of the library would: the public header,
// CLI11 and fmt only. The parts that are no template (the flags, the runtime,
// the report) are compiled once, in app_main.cpp.
//
// An app is a Workload:
//   explicit Workload(Size);                       sizes fixed by --size
//   std::uint64_t footprint() const;               bytes of all its arrays
//   Arrays setup(ca::Runtime&);                    creates and fills them
//   void iteration(ca::Runtime&, Arrays&, int i);  iteration i (0-based, warm-ups included)
//   std::string verify(Arrays&, int n) const;      "" when the arrays hold what n
//                                                  iterations of plain code give
// and, for a program whose pattern changes, optionally
//   std::string phase_of(int i) const;             the phase iteration i is in,
//                                                  reported per timed iteration
// and, for an app with flags of its own, optionally
//   struct Flags { void add_to(CLI::App&); };      declares them (CLI11); their
//                                                  values are its members
//   Workload(Size, const Flags&);                  then made from them instead
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>

// Only an app with flags of its own includes CLI11, which costs seconds in
// every unit that includes it.
namespace CLI {
class App;
}  // namespace CLI

namespace cachedarrays::apps {

/// test: a few MiB, well under a second per run; bench: hundreds of MiB.
enum class Size { test, bench };

/// A small seeded generator (splitmix64), the same in the app and in its
/// plain reference.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  /// Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// Draws among `n` items by a Zipf law of `exponent` on their ranks; which
/// item holds which rank is a fixed shuffle by `seed`, so that the hot items
/// are not simply the first ones.
struct Zipf {
  std::vector<double> cdf;           // of the ranks
  std::vector<std::size_t> of_rank;  // the item each rank names

  Zipf(std::size_t n, double exponent, std::uint64_t seed) : of_rank(n) {
    double total = 0;
    for (std::size_t r = 0; r < n; ++r) cdf.push_back(total += 1 / std::pow(static_cast<double>(r + 1), exponent));
    for (double& c : cdf) c /= total;
    std::iota(of_rank.begin(), of_rank.end(), std::size_t{0});
    Rng rng{seed};
    for (std::size_t i = n - 1; i > 0; --i) std::swap(of_rank[i], of_rank[rng.below(i + 1)]);
  }

  /// One item, drawn with `rng`.
  std::size_t draw(Rng& rng) const {
    const double u = rng.uniform();
    return of_rank[static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end() - 1, u) - cdf.begin())];
  }
};

namespace detail {

// A Runtime from the environment. The hardware's memory mode (2lm:m) is no
// policy: as train_cnn does, it runs all-fast on the slow tier alone, fronted
// by a DRAM cache as large as the fast tier would have been (the slow tier's
// emulation profile, or Optane's when it has none).
Runtime make_runtime(const RuntimeDefaults& defaults, const EnvironmentSettings& env);

double median(std::vector<double> v);

struct Options {
  std::string size = "test";
  int iterations = 5;
  int profile_iterations = 3;
  std::string json;
  std::string program_out;
};

struct Report {
  std::string app, policy, emulation, error;
  double fast_fraction = 0;
  std::uint64_t fast_bytes = 0, footprint = 0;
  std::vector<double> seconds;
  std::vector<std::string> phases;  // of the timed iterations, when the workload has phases
  std::string program_json = "null";
  // What the policy moved over the timed iterations, per iteration.
  double copied_in_bytes = 0, written_back_bytes = 0, served_in_place = 0;
};

void write_report(const std::string& path, const Report& r);

// The flags, or nullopt with the exit status CLI11 gives (help, a bad flag).
// `add_app_flags`, when set, declares the app's own flags on the same parser.
std::optional<Options> parse_options(int argc, char** argv, const char* name, const char* description, int& exit_code,
                                     const std::function<void(CLI::App&)>& add_app_flags = {});

// The Flags of a Workload that declares flags of its own; NoFlags otherwise.
struct NoFlags {};
template <typename Workload>
struct FlagsOf {
  using type = NoFlags;
};
template <typename Workload>
requires requires { typename Workload::Flags; }
struct FlagsOf<Workload> {
  using type = typename Workload::Flags;
};

// The workload of `size`, made from its own flags when it has some.
template <typename Workload, typename Flags>
Workload make_workload(Size size, const Flags& flags) {
  if constexpr (std::is_same_v<Flags, NoFlags>) {
    return Workload(size);
  } else {
    return Workload(size, flags);
  }
}

// The run's two lines on standard output.
void print_report(const char* name, const Report& r);

// Runs `workload` as app_main says and reports what it measured; throws
// what the library throws.
template <typename Workload>
Report run(Workload& workload, const char* name, const Options& o) {
  Report r;
  r.app = name;
  r.footprint = workload.footprint();
  const EnvironmentSettings env = read_environment();
  const RuntimeDefaults defaults{.policy = "auto", .fast_bytes = r.footprint / 2, .footprint = r.footprint};
  r.fast_bytes = devices_from_environment(defaults, env).at(0).capacity;
  r.fast_fraction = static_cast<double>(r.fast_bytes) / static_cast<double>(r.footprint);
  r.emulation = env.emulation.value_or("none");
  r.policy = env.policy.value_or(defaults.policy);
  Runtime rt = make_runtime(defaults, env);
  {
    auto arrays = workload.setup(rt);
    int done = 0;
    const auto iteration = [&] {
      rt.begin_iteration();
      workload.iteration(rt, arrays, done++);
      rt.collect();
    };
    iteration();  // warm-up: first placements, first page faults
    rt.set_profile_iterations(static_cast<std::uint32_t>(o.profile_iterations));
    rt.record_program();
    iteration();  // recorded; the policy has the program from the next one on
    // Profiled: the kernels are timed, and the planners plan again from
    // those times before the timed iterations.
    for (int i = 0; i < o.profile_iterations; ++i) iteration();
    const Stats before = rt.stats();
    for (int i = 0; i < o.iterations; ++i) {
      if constexpr (requires { workload.phase_of(0); }) r.phases.push_back(workload.phase_of(done));
      const auto start = std::chrono::steady_clock::now();
      iteration();
      r.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const Stats moved = rt.stats().since(before);
    const auto per_iteration = [&](std::uint64_t n) { return static_cast<double>(n) / o.iterations; };
    r.copied_in_bytes = per_iteration(moved.policy.prefetch_bytes);
    r.written_back_bytes = per_iteration(moved.policy.writeback_bytes);
    r.served_in_place = per_iteration(moved.policy.served_in_place);
    // The check's reads are no iteration of the program.
    rt.begin_unplanned_iteration();
    r.error = workload.verify(arrays, done);
  }
  if (const auto program = rt.program()) {
    r.program_json = program->to_json();
    if (!o.program_out.empty()) program->save(o.program_out);
  }
  return r;
}

}  // namespace detail

/// Parses the flags, runs the workload under the policy and fast tier the
/// environment names — one warm-up iteration, one recorded as the program
/// (rt.record_program) that the policy then has, --profile-iterations in
/// which its kernels are timed (Runtime::set_profile_iterations), and
/// --iterations timed ones
/// — checks it against plain code and reports. Exit status: 0 verified,
/// 1 a mismatch, 2 a bad environment or a library error, CLI11's for bad
/// flags.
template <typename Workload>
int app_main(int argc, char** argv, const char* name, const char* description) {
  int exit_code = 0;
  using Flags = typename detail::FlagsOf<Workload>::type;
  Flags flags;
  std::function<void(CLI::App&)> add_app_flags;
  if constexpr (!std::is_same_v<Flags, detail::NoFlags>) add_app_flags = [&flags](CLI::App& cli) { flags.add_to(cli); };
  const std::optional<detail::Options> parsed =
      detail::parse_options(argc, argv, name, description, exit_code, add_app_flags);
  if (!parsed) return exit_code;
  const detail::Options& o = *parsed;

  detail::Report r;
  try {
    Workload workload = detail::make_workload<Workload>(o.size == "bench" ? Size::bench : Size::test, flags);
    r = detail::run(workload, name, o);
    if (!o.json.empty()) detail::write_report(o.json, r);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 2;
  }
  if (!r.error.empty()) {
    fmt::print(stderr, "{}: policy {}: NOT verified: {}\n", name, r.policy, r.error);
    return 1;
  }
  detail::print_report(name, r);
  return 0;
}

}  // namespace cachedarrays::apps
