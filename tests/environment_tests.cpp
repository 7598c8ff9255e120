// Configuration from the environment (runtime/environment.hpp) and sizes as
// people write them (parse_bytes): every variable's good values arrive,
// every bad one is refused with a message naming the variable, the value
// and what is allowed, and the factory builds the tiers they describe.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// An environment of exactly these variables.
ca::EnvironmentLookup environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

std::string environment_refusal(std::map<std::string, std::string> values) {
  return test::invalid_argument_of([&] { (void)ca::read_environment(environment(std::move(values))); });
}

}  // namespace

TEST_CASE("parse_bytes: sizes with binary and decimal units, and format_bytes' output") {
  CHECK(ca::parse_bytes("1073741824") == 1073741824ull);
  CHECK(ca::parse_bytes("512MiB") == 512ull << 20);
  CHECK(ca::parse_bytes("512 mib") == 512ull << 20);
  CHECK(ca::parse_bytes("8G") == 8ull << 30);
  CHECK(ca::parse_bytes("1.5 GiB") == 3ull << 29);
  CHECK(ca::parse_bytes("2KB") == 2000u);
  CHECK(ca::parse_bytes("3 TB") == 3000000000000ull);
  CHECK(ca::parse_bytes("64b") == 64u);
  CHECK(ca::parse_bytes(" 7 ") == 7u);
  CHECK(ca::parse_bytes("0.5") == 0u);  // a fraction of a byte rounds down
  for (const std::uint64_t bytes : {std::uint64_t{1000}, std::uint64_t{3} << 30, std::uint64_t{123456789}}) {
    // Two decimals of a unit: within half a percent.
    const auto back = ca::parse_bytes(ca::format_bytes(bytes));
    REQUIRE(back.has_value());
    CHECK(static_cast<double>(*back) == doctest::Approx(static_cast<double>(bytes)).epsilon(0.005));
  }
  for (const char* bad : {"", "GiB", "-5", "1e9", "12XB", "1.2.3", "0x10", "18446744073709551616", "99999999T"}) {
    CAPTURE(bad);
    CHECK_FALSE(ca::parse_bytes(bad).has_value());
  }
}

TEST_CASE("environment: every variable is read, and an empty one counts as unset") {
  const test::ScratchPath dir("env-slow");
  std::filesystem::create_directories(dir.path);
  const ca::EnvironmentSettings env = ca::read_environment(environment({
      {"CACHEDARRAYS_POLICY", "ca-lma"},
      {"CACHEDARRAYS_FAST_BYTES", "3MiB"},
      {"CACHEDARRAYS_FAST_NODE", "0"},
      {"CACHEDARRAYS_SLOW_BYTES", "16M"},
      {"CACHEDARRAYS_SLOW_PATH", dir.path.string()},
      {"CACHEDARRAYS_EMULATION", "cxl"},
      {"CACHEDARRAYS_TRACE", "/tmp/run.json"},
      {"CACHEDARRAYS_SLOW_NODE", ""},
  }));
  CHECK(env.policy == "ca-lma");
  CHECK(env.fast_bytes == 3ull << 20);
  CHECK_FALSE(env.fast_fraction.has_value());
  CHECK(env.fast_node == 0);
  CHECK(env.slow_bytes == 16ull << 20);
  CHECK(env.slow_path == dir.path);
  CHECK_FALSE(env.slow_node.has_value());
  CHECK(env.emulation == "cxl");
  CHECK(env.trace == std::filesystem::path("/tmp/run.json"));

  const ca::EnvironmentSettings nothing = ca::read_environment(environment({}));
  CHECK_FALSE(nothing.policy.has_value());
  CHECK_FALSE(nothing.fast_bytes.has_value());
  CHECK_FALSE(nothing.emulation.has_value());
}

TEST_CASE("environment: a bad value names the variable, the value and what is allowed") {
  struct Case {
    const char* name;
    const char* value;
    const char* why;
  };
  for (const Case& c : {
           Case{"CACHEDARRAYS_POLICY", "fastest-please", "fastest-please"},
           Case{"CACHEDARRAYS_FAST_BYTES", "12XB", "not a size"},
           Case{"CACHEDARRAYS_FAST_BYTES", "0", "0 bytes"},
           Case{"CACHEDARRAYS_FAST_FRACTION", "half", "not a number"},
           Case{"CACHEDARRAYS_FAST_FRACTION", "0", "out of range"},
           Case{"CACHEDARRAYS_FAST_FRACTION", "65", "out of range"},
           Case{"CACHEDARRAYS_FAST_NODE", "-1", "not a NUMA node"},
           Case{"CACHEDARRAYS_SLOW_NODE", "one", "not a NUMA node"},
           Case{"CACHEDARRAYS_SLOW_BYTES", "lots", "not a size"},
           Case{"CACHEDARRAYS_SLOW_PATH", "/no/such/directory/heap", "does not exist"},
           Case{"CACHEDARRAYS_EMULATION", "floppy", "no such profile"},
           Case{"CACHEDARRAYS_TRACE", "/tmp/run.txt", "extension"},
       }) {
    CAPTURE(c.name);
    CAPTURE(c.value);
    const std::string message = environment_refusal({{c.name, c.value}});
    test::check_contains(message, std::string(c.name) + "='" + c.value + "'");
    test::check_contains(message, c.why);
    test::check_contains(message, "allowed: ");
  }
  // Contradictions.
  test::check_contains(environment_refusal({{"CACHEDARRAYS_FAST_BYTES", "1M"}, {"CACHEDARRAYS_FAST_FRACTION", "0.2"}}),
                       "CACHEDARRAYS_FAST_BYTES is set too");
  test::check_contains(environment_refusal({{"CACHEDARRAYS_SLOW_PATH", "/dev/shm/x"}, {"CACHEDARRAYS_SLOW_NODE", "1"}}),
                       "CACHEDARRAYS_SLOW_PATH is set too");
  // The table documents every variable it checks.
  for (const ca::EnvironmentVariable& v : ca::environment_variables()) {
    CAPTURE(v.name);
    CHECK(std::string(v.name).rfind("CACHEDARRAYS_", 0) == 0);
    CHECK(std::string(v.allowed).size() > 3);
  }
}

TEST_CASE("environment: the devices and the runtime it describes") {
  ca::RuntimeDefaults defaults;
  defaults.fast_bytes = 1 << 20;
  defaults.footprint = 10 << 20;
  SUBCASE("defaults alone") {
    const auto devices = ca::devices_from_environment(defaults, ca::read_environment(environment({})));
    REQUIRE(devices.size() == 2);
    CHECK(devices[0].kind == ca::DeviceKind::dram);
    CHECK(devices[0].capacity == 1u << 20);
    CHECK(devices[0].numa_node == -1);
    CHECK(devices[1].kind == ca::DeviceKind::dax);
    CHECK(devices[1].capacity == (10u << 20) + (5u << 20) + (64u << 20));
    CHECK_FALSE(devices[1].emulation.has_value());
  }
  SUBCASE("sizes, a fraction, a node and emulation from the environment") {
    auto devices = ca::devices_from_environment(
        defaults, ca::read_environment(environment({{"CACHEDARRAYS_FAST_FRACTION", "0.25"},
                                                     {"CACHEDARRAYS_SLOW_BYTES", "32MiB"},
                                                     {"CACHEDARRAYS_FAST_NODE", "0"},
                                                     {"CACHEDARRAYS_EMULATION", "optane"}})));
    CHECK(devices[0].capacity == (10u << 20) / 4);
    CHECK(devices[0].numa_node == 0);
    CHECK(devices[1].capacity == 32u << 20);
    REQUIRE(devices[1].emulation.has_value());
    CHECK(devices[1].emulation->name == "optane");
    devices = ca::devices_from_environment(
        defaults, ca::read_environment(environment({{"CACHEDARRAYS_FAST_BYTES", "2MiB"}, {"CACHEDARRAYS_SLOW_NODE", "3"}})));
    CHECK(devices[0].capacity == 2u << 20);
    CHECK(devices[1].kind == ca::DeviceKind::numa);
    CHECK(devices[1].numa_node == 3);
  }
  SUBCASE("a fraction of an unknown footprint, or no size at all, is refused") {
    ca::RuntimeDefaults unknown;
    test::check_contains(test::invalid_argument_of([&] {
                           (void)ca::devices_from_environment(
                               unknown, ca::read_environment(environment({{"CACHEDARRAYS_FAST_FRACTION", "0.5"}})));
                         }),
                         "set CACHEDARRAYS_FAST_BYTES instead");
    test::check_contains(test::invalid_argument_of([&] {
                           (void)ca::devices_from_environment(unknown, ca::read_environment(environment({})));
                         }),
                         "no fast-tier size");
  }
  SUBCASE("the runtime has the policy the environment names, and the tiers") {
    ca::Runtime rt = ca::runtime_from_environment(
        defaults, ca::read_environment(environment({{"CACHEDARRAYS_POLICY", "first-touch"},
                                                    {"CACHEDARRAYS_SLOW_BYTES", "4MiB"}})));
    CHECK(rt.policy().name() == "first-touch");
    CHECK(rt.manager().capacity(0) == 1u << 20);
    CHECK(rt.manager().capacity(1) == 4u << 20);
    ca::Runtime fallback = ca::runtime_from_environment(
        defaults, ca::read_environment(environment({{"CACHEDARRAYS_SLOW_BYTES", "4MiB"}})));
    CHECK(fallback.policy().name() == defaults.policy);
  }
  SUBCASE("CACHEDARRAYS_TRACE: the runtime records its whole run and writes it when destroyed") {
    const test::ScratchPath trace("environment-trace.csv");
    {
      ca::Runtime rt = ca::runtime_from_environment(
          defaults, ca::read_environment(environment({{"CACHEDARRAYS_TRACE", trace.path.string()},
                                                      {"CACHEDARRAYS_SLOW_BYTES", "4MiB"}})));
      REQUIRE(rt.trace() != nullptr);
      auto a = rt.array<float>(1024);
      a.retire();
      CHECK_FALSE(std::filesystem::exists(trace.path));  // written at the end, not before
    }
    REQUIRE(std::filesystem::exists(trace.path));
    std::ifstream in(trace.path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    test::check_contains(text, "create");
    test::check_contains(text, "retire");
  }
}

TEST_CASE("runtime: a trace file must end in .json or .csv") {
  test::check_contains(test::invalid_argument_of([] {
                         ca::Runtime rt({ca::dram(1 << 20)}, nullptr, {}, "/dev/shm/trace.txt");
                       }),
                       "trace file '/dev/shm/trace.txt' must end in .json (Chrome trace) or .csv");
}
