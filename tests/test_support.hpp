// Helpers shared by the test files: small two-tier managers, content
// patterns that detect any lost or changed byte, scratch paths, message
// checks, and the tests' one random source.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"

namespace test {

namespace ca = cachedarrays;

// Sizes shared by the test files, which a unity build compiles together.
inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t MB = 1'000'000;

// The devices of a two-tier runtime (two_tiers), in the order it lists them.
inline constexpr ca::DeviceId fast_device = 0;
inline constexpr ca::DeviceId slow_device = 1;

// Kernel argument accesses, short, for hand-written programs.
inline constexpr ca::Access R = ca::Access::read;
inline constexpr ca::Access W = ca::Access::write;

// A fast DRAM tier and a slow tier on a DAX file under /dev/shm.
inline std::vector<ca::DeviceSpec> two_tiers(std::uint64_t fast_bytes = 1 << 20, std::uint64_t slow_bytes = 8 << 20) {
  return {ca::dram(fast_bytes, "fast"), ca::dax_file({}, slow_bytes, "slow")};
}

// The base of a test's own policy: every new object goes to the fast device
// and is refused when it is full, so that the test's policy says only what
// it is there to test.
class FastDevicePolicy : public ca::policy::Policy {
 public:
  [[nodiscard]] bool place(ca::Object& object) override {
    ca::Region* region = manager().allocate(fast_device, object.bytes());
    if (region == nullptr) return false;
    manager().setprimary(object, *region);
    return true;
  }
};

// The byte at position i of a pattern identified by `seed`.
inline std::byte pattern_byte(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 31;
  return static_cast<std::byte>(x & 0xff);
}

inline void fill(std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < bytes; ++i) data[i] = pattern_byte(seed, i);
}

inline bool holds(const std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < bytes; ++i)
    if (data[i] != pattern_byte(seed, i)) return false;
  return true;
}

// Word `word` of the pattern identified by `seed`, for tests that fill and
// compare a word at a time: it depends on both, so a lost, changed or
// shifted word shows.
inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t word) {
  const std::uint64_t x = (seed ^ (word * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

// Word-pattern contents of an array of 64-bit words (pattern_word).
inline void fill_words(std::span<std::uint64_t> data, std::uint64_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = pattern_word(seed, i);
}

inline bool words_hold(std::span<const std::uint64_t> data, std::uint64_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] != pattern_word(seed, i)) return false;
  }
  return true;
}

// A runtime under CA:LM whose fast tier holds a quarter of `arrays` arrays
// of `words` 64-bit words, and the arrays, array i filled with the word
// pattern seed_of(i): the setting of the tests where threads access arrays
// while others keep moving them.
struct QuarterFastArrays {
  ca::Runtime rt;
  std::vector<ca::CachedArray<std::uint64_t>> data;
  template <typename SeedOf>
  QuarterFastArrays(int arrays, std::size_t words, SeedOf&& seed_of)
      : rt{two_tiers(static_cast<std::uint64_t>(arrays) / 4 * words * 8, 4 << 20),
           std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)} {
    for (int i = 0; i < arrays; ++i) {
      data.push_back(rt.array<std::uint64_t>(words));
      auto w = data.back().write();
      fill_words(w, seed_of(i));
    }
  }
};

// The primary's contents hold the word pattern `seed`, read through the
// manager (a scoped read() would hint the policy and count as a kernel of
// the iteration). Hold the runtime's lock.
inline bool primary_words_hold(const ca::DataManager& dm, const ca::Object& object, std::uint64_t seed) {
  const ca::Region* primary = dm.getprimary(object);
  REQUIRE(primary != nullptr);
  const auto* words = reinterpret_cast<const std::uint64_t*>(dm.pointer(*primary));
  return words_hold({words, object.bytes() / sizeof(std::uint64_t)}, seed);
}

// A number from the environment variable `name`, or `fallback` when it is
// unset or empty.
inline std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : fallback;
}

// The seed for randomized tests: CACHEDARRAYS_TEST_SEED or a fixed default.
inline std::uint64_t test_seed(std::uint64_t fallback) { return env_or("CACHEDARRAYS_TEST_SEED", fallback); }

// splitmix64 (Steele, Lea and Flood): a 64-bit state and a few multiplies,
// cheap enough for a generator per thread.
class SplitMix64 {
 public:
  using result_type = std::uint64_t;
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// The random source of every test: deterministic for a seed, which it
// keeps so that a failing test can print it and CACHEDARRAYS_TEST_SEED (see
// test_seed) can replay it. Both engines' outputs are fixed by their
// definitions, so the helpers reduce them with `%` (bias negligible for the
// small ranges tests draw from) instead of the std distributions, whose
// results differ between standard libraries. It is a
// UniformRandomBitGenerator, so std::shuffle and distributions take it too.
//
// test::Rng (std::mt19937_64) is the default; test::SplitMixRng serves the
// property and stress tests, whose recorded sequences were drawn from it.
template <typename Engine>
class BasicRng {
 public:
  using result_type = std::uint64_t;
  explicit BasicRng(std::uint64_t seed) : seed_(seed), engine_(seed) {}

  static constexpr result_type min() { return Engine::min(); }
  static constexpr result_type max() { return Engine::max(); }
  result_type operator()() { return engine_(); }

  [[nodiscard]] std::uint64_t seed() const { return seed_; }
  // Uniform in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n) { return engine_() % n; }
  // Uniform in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  // True p times out of a hundred.
  bool percent(std::uint64_t p) { return below(100) < p; }

 private:
  std::uint64_t seed_;
  Engine engine_;
};

using Rng = BasicRng<std::mt19937_64>;
using SplitMixRng = BasicRng<SplitMix64>;
static_assert(std::uniform_random_bit_generator<Rng> && std::uniform_random_bit_generator<SplitMixRng>);

// A built-in policy by name, except that AutoTM's ILP gets a second (or
// `plan_seconds`) per plan instead of a minute: the tests that run every policy check that no
// byte is lost whatever the plan, and a plan found in a second moves
// objects as surely as the optimum (a small fast tier makes Cbc retry for
// the heap's fragments, which alone takes seconds and proves nothing more).
// `plan_seconds` bounds each solve.
inline std::unique_ptr<ca::policy::Policy> policy_with_quick_plans(const std::string& name, double plan_seconds = 1) {
  if (const auto formulation = ca::policy::autotm_formulation(name)) {
    ca::policy::AutotmPolicyOptions options;
    options.solver.formulation = *formulation;
    options.solver.time_limit_seconds = plan_seconds;
    return std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
  }
  return ca::policy::Registry::builtin().make(name);
}

// An object placed on `device` and filled with pattern `seed`, as a policy
// and a write access would do.
inline ca::Object& make_object(ca::DataManager& dm, ca::DeviceId device, std::uint64_t bytes, std::uint64_t seed) {
  ca::Object& object = dm.create_object(bytes);
  ca::Region* region = dm.allocate(device, bytes);
  if (region == nullptr) {
    dm.destroy(object);
    throw ca::error("test: device " + std::to_string(device) + " is full");
  }
  dm.setprimary(object, *region);
  dm.pin(object, ca::Access::write);
  fill(dm.pointer(*region), bytes, seed);
  ca::DataManager::unpin(object, ca::Access::write);
  return object;
}

// An array's contents, through a write access: pattern `seed`.
inline void fill(ca::CachedArray<std::byte>& array, std::uint64_t seed) {
  auto w = array.write();
  fill(w.data(), w.size(), seed);
}

// The array holds pattern `seed`, read through a read access.
inline bool holds(const ca::CachedArray<std::byte>& array, std::uint64_t seed) {
  auto r = array.read();
  return holds(r.data(), r.size(), seed);
}

// Every byte of the array is `value`, read through a read access.
inline bool all_equal(const ca::CachedArray<std::byte>& array, std::byte value) {
  const auto r = array.read();
  return std::all_of(r.begin(), r.end(), [&](std::byte b) { return b == value; });
}

// The device of the array's primary copy, asked under the runtime's lock.
inline ca::DeviceId device_of(ca::Runtime& rt, const ca::CachedArray<std::byte>& array) {
  auto guard = rt.lock();
  return rt.manager().device(*rt.manager().getprimary(array.object()));
}

// Events of hand-made traces: object `id` of `bytes` is created, or retired.
inline void create(ca::Trace& t, std::uint64_t id, std::uint64_t bytes) {
  t.record({.kind = ca::TraceKind::create, .object = id, .bytes = bytes});
}
inline void retire(ca::Trace& t, std::uint64_t id) { t.record({.kind = ca::TraceKind::retire, .object = id}); }

inline bool object_holds(const ca::DataManager& dm, const ca::Object& object, std::uint64_t seed) {
  const ca::Region* primary = dm.getprimary(object);
  return primary != nullptr && holds(dm.pointer(*primary), object.bytes(), seed);
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the exception of type E that `f()` throws ("no error" if it throws none).
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

// The message of the invalid_argument `f()` throws ("no error" if it throws none).
template <typename F>
std::string invalid_argument_of(F&& f) {
  // Qualified: through the lambda's namespace, argument-dependent lookup
  // would also find a test file's own message_of.
  return test::message_of<ca::invalid_argument>(std::forward<F>(f));
}

// A check that `message` contains `part`, showing the message when not.
inline void check_contains(const std::string& message, const std::string& part) {
  INFO("message: " << message);
  CHECK(contains(message, part));
}

// Sets (or, with nullopt, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& value) const {
    if (value) {
      ::setenv(name_, value->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

// A scratch path unique to this process, under /dev/shm (or the temporary
// directory), that does not exist when the test starts and is removed with
// its contents when the test ends, whatever happened.
struct ScratchPath {
  std::filesystem::path path;
  explicit ScratchPath(const std::string& tag)
      : path(std::filesystem::path(std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                             : std::filesystem::temp_directory_path()) /
             ("cachedarrays-test-" + std::to_string(::getpid()) + "-" + tag)) {
    std::filesystem::remove_all(path);
  }
  ~ScratchPath() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;
};

// The files this process's default-named DAX heaps have in `dir`.
inline std::set<std::string> heap_files(const std::filesystem::path& dir) {
  const std::string prefix = "cachedarrays-" + std::to_string(::getpid()) + "-";
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) names.insert(name);
  }
  return names;
}

// An emulation profile with these bandwidths (GB/s, i.e. bytes/ns) and
// latency (ns).
inline ca::EmulationProfile emulation_profile(double read, double write, double latency, double dram_read,
                                              double dram_write) {
  ca::EmulationProfile p;
  p.name = "test";
  p.read_gbps = read;
  p.write_gbps = write;
  p.latency_ns = latency;
  p.dram_read_gbps = dram_read;
  p.dram_write_gbps = dram_write;
  return p;
}

}  // namespace test
