// Configuration from the environment (runtime/environment.hpp) and sizes as
// people write them (parse_bytes): every variable's good values arrive,
// every bad one is refused with a message naming the variable, the value
// and what is allowed, and the factory builds the tiers they describe.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
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
  // The table documents every variable it checks: the library's own are
  // prefixed, and the standard ones it also reads are few and named.
  const std::set<std::string> standard = {"TMPDIR",   "HOME",     "XDG_CACHE_HOME", "OMPI_COMM_WORLD_SIZE",
                                          "PMI_SIZE", "PMI_RANK", "PMIX_RANK",      "OMP_NUM_THREADS"};
  for (const ca::EnvironmentVariable& v : ca::environment_variables()) {
    CAPTURE(v.name);
    CHECK((std::string(v.name).rfind("CACHEDARRAYS_", 0) == 0 || standard.count(v.name) == 1));
    CHECK(std::string(v.allowed).size() > 3);
  }
}

TEST_CASE("environment: the Runtime's own variables, each bad value refused by name") {
  const test::ScratchPath dir("env-snapshots");
  std::filesystem::create_directories(dir.path);
  SUBCASE("unset or empty") {
    const ca::RuntimeEnvironment env = ca::read_runtime_environment(
        environment({{"CACHEDARRAYS_SNAPSHOT_DIR", ""}, {"CACHEDARRAYS_LEAK_REPORT", ""}}));
    CHECK_FALSE(env.snapshot_dir.has_value());
    CHECK_FALSE(env.leak_report.has_value());
    CHECK_FALSE(env.program_out.has_value());
  }
  SUBCASE("good values") {
    const ca::RuntimeEnvironment env =
        ca::read_runtime_environment(environment({{"CACHEDARRAYS_SNAPSHOT_DIR", dir.path.string()},
                                                  {"CACHEDARRAYS_LEAK_REPORT", "0"},
                                                  {"CACHEDARRAYS_PROGRAM_OUT", "run.json"}}));
    CHECK(env.snapshot_dir == dir.path);
    CHECK(env.leak_report == false);
    CHECK(env.program_out == std::filesystem::path("run.json"));
    CHECK(ca::read_runtime_environment(environment({{"CACHEDARRAYS_LEAK_REPORT", "1"}})).leak_report == true);
  }
  SUBCASE("bad values") {
    const test::ScratchPath file("env-snapshot-file");
    std::ofstream(file.path) << "not a directory";
    const auto refusal = [](std::map<std::string, std::string> values) {
      return test::invalid_argument_of([&] { (void)ca::read_runtime_environment(environment(std::move(values))); });
    };
    const std::string not_directory = refusal({{"CACHEDARRAYS_SNAPSHOT_DIR", file.path.string()}});
    test::check_contains(not_directory, "CACHEDARRAYS_SNAPSHOT_DIR");
    test::check_contains(not_directory, "is not a directory");
    const std::string leak = refusal({{"CACHEDARRAYS_LEAK_REPORT", "yes"}});
    test::check_contains(leak, "CACHEDARRAYS_LEAK_REPORT='yes'");
    test::check_contains(leak, "use 1");
    const std::string program = refusal({{"CACHEDARRAYS_PROGRAM_OUT", "run.csv"}});
    test::check_contains(program, "CACHEDARRAYS_PROGRAM_OUT='run.csv'");
    test::check_contains(program, ".json");
  }
}

TEST_CASE("environment: the copy engine's and the heaps' process settings") {
  SUBCASE("unset") {
    const ca::ProcessEnvironment env = ca::read_process_environment(environment({}));
    CHECK_FALSE(env.copy.has_value());
    CHECK_FALSE(env.nt_isa.has_value());
    CHECK_FALSE(env.tmpdir.has_value());
  }
  SUBCASE("good values") {
    const ca::ProcessEnvironment env = ca::read_process_environment(
        environment({{"CACHEDARRAYS_COPY", "memcpy"}, {"CACHEDARRAYS_NT_ISA", "avx2"}, {"TMPDIR", "/var/tmp"}}));
    CHECK(env.copy == ca::CopyMode::memcpy);
    CHECK(env.nt_isa == ca::StreamIsa::avx2);
    CHECK(env.tmpdir == std::filesystem::path("/var/tmp"));
    CHECK(ca::read_process_environment(environment({{"CACHEDARRAYS_NT_ISA", "sse2"}})).nt_isa == ca::StreamIsa::sse2);
    CHECK(ca::read_process_environment(environment({{"CACHEDARRAYS_NT_ISA", "avx512"}})).nt_isa ==
          ca::StreamIsa::avx512);
  }
  SUBCASE("bad values") {
    const auto refusal = [](std::map<std::string, std::string> values) {
      return test::invalid_argument_of([&] { (void)ca::read_process_environment(environment(std::move(values))); });
    };
    const std::string copy = refusal({{"CACHEDARRAYS_COPY", "fastest"}});
    test::check_contains(copy, "CACHEDARRAYS_COPY='fastest'");
    test::check_contains(copy, "allowed: auto, nt, memcpy");
    const std::string isa = refusal({{"CACHEDARRAYS_NT_ISA", "avx1024"}});
    test::check_contains(isa, "CACHEDARRAYS_NT_ISA='avx1024'");
    test::check_contains(isa, "allowed: avx512, avx2, sse2");
  }
  SUBCASE("applied: unset ones leave the settings as they are") {
    const ca::CopyMode mode = ca::copy_mode();
    const ca::StreamIsa isa = ca::stream_isa_cap();
    const std::filesystem::path fallback = ca::dax_fallback_directory();
    ca::apply_process_environment(ca::read_process_environment(environment({})));
    CHECK(ca::copy_mode() == mode);
    CHECK(ca::stream_isa_cap() == isa);
    CHECK(ca::dax_fallback_directory() == fallback);
    ca::apply_process_environment(ca::read_process_environment(environment({{"TMPDIR", "/var/tmp"}})));
    CHECK(ca::dax_fallback_directory() == std::filesystem::path("/var/tmp"));
    ca::set_dax_fallback_directory(fallback);
  }
}

TEST_CASE("environment: the trainer's variables") {
  CHECK_FALSE(ca::mpi_timeout_from_environment(environment({})).has_value());
  CHECK(ca::mpi_timeout_from_environment(environment({{"CACHEDARRAYS_MPI_TIMEOUT", "2.5"}})) == 2.5);
  for (const char* bad : {"soon", "0", "-3", "5s"}) {
    CAPTURE(bad);
    const std::string message = test::invalid_argument_of([&] {
      (void)ca::mpi_timeout_from_environment(environment({{"CACHEDARRAYS_MPI_TIMEOUT", bad}}));
    });
    test::check_contains(message, std::string("CACHEDARRAYS_MPI_TIMEOUT='") + bad + "'");
    test::check_contains(message, "a number above 0");
  }
  CHECK_FALSE(ca::launched_by_mpi_environment(environment({})));
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    CAPTURE(launcher);
    CHECK(ca::launched_by_mpi_environment(environment({{launcher, "2"}})));
  }
  CHECK_FALSE(ca::fashion_mnist_dir_from_environment(environment({})).has_value());
  CHECK(ca::fashion_mnist_dir_from_environment(environment({{"CACHEDARRAYS_FASHION_MNIST_DIR", "/data/fm"}})) ==
        std::filesystem::path("/data/fm"));
  CHECK_FALSE(ca::openmp_threads_from_environment(environment({})).has_value());
  CHECK(ca::openmp_threads_from_environment(environment({{"OMP_NUM_THREADS", "3"}})) == 3);
  CHECK(ca::openmp_threads_from_environment(environment({{"OMP_NUM_THREADS", "8,4"}})) == 8);  // nested levels
  for (const char* unusable : {"0", "-2", "many", ",4"}) {
    CAPTURE(unusable);
    CHECK_FALSE(ca::openmp_threads_from_environment(environment({{"OMP_NUM_THREADS", unusable}})).has_value());
  }
  CHECK_FALSE(ca::user_cache_directory(environment({})).has_value());
  CHECK(ca::user_cache_directory(environment({{"HOME", "/users/u"}})) ==
        std::filesystem::path("/users/u/.cache/cachedarrays"));
  CHECK(ca::user_cache_directory(environment({{"HOME", "/users/u"}, {"XDG_CACHE_HOME", "/cache"}})) ==
        std::filesystem::path("/cache/cachedarrays"));
}

TEST_CASE("environment: docs/guide/configuration.md lists exactly the variables environment_variables() does") {
  std::ifstream in(std::filesystem::path(CACHEDARRAYS_DOCS_DIR) / "guide" / "configuration.md");
  REQUIRE(in.good());
  // A table row whose first cell is a variable: | `NAME` | ...
  const std::regex row(R"(^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|)");
  std::set<std::string> documented;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented.insert(m[1]);
  }
  std::set<std::string> listed;
  for (const ca::EnvironmentVariable& v : ca::environment_variables()) listed.insert(v.name);
  for (const std::string& name : listed) {
    CAPTURE(name);
    CHECK_MESSAGE(documented.count(name) == 1, "read by the library, missing from docs/guide/configuration.md");
  }
  for (const std::string& name : documented) {
    CAPTURE(name);
    CHECK_MESSAGE(listed.count(name) == 1, "in docs/guide/configuration.md, not in environment_variables()");
  }
  CHECK(listed.size() == ca::environment_variables().size());  // each listed once
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
        defaults,
        ca::read_environment(environment({{"CACHEDARRAYS_FAST_BYTES", "2MiB"}, {"CACHEDARRAYS_SLOW_NODE", "3"}})));
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
        defaults, ca::read_environment(
                      environment({{"CACHEDARRAYS_POLICY", "first-touch"}, {"CACHEDARRAYS_SLOW_BYTES", "4MiB"}})));
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
          defaults, ca::read_environment(environment(
                        {{"CACHEDARRAYS_TRACE", trace.path.string()}, {"CACHEDARRAYS_SLOW_BYTES", "4MiB"}})));
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
  test::check_contains(
      test::invalid_argument_of([] { ca::Runtime rt({ca::dram(1 << 20)}, nullptr, {}, "/dev/shm/trace.txt"); }),
      "trace file '/dev/shm/trace.txt' must end in .json (Chrome trace) or .csv");
}
