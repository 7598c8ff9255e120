// Traces: what is recorded, the Chrome JSON and CSV exports, and that a dry
// run of a model emits exactly the events of a real run.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

// Everything but the timestamp.
std::string describe(const ca::Trace& t, const ca::TraceEvent& e) {
  std::string s = std::string(ca::to_string(e.kind)) + " d" + std::to_string(e.detail) + " " +
                  std::to_string(e.device) + ">" + std::to_string(e.device2) + " #" + std::to_string(e.object) + " " +
                  std::to_string(e.bytes);
  if (e.kind == ca::TraceKind::kernel_begin || e.kind == ca::TraceKind::kernel_end) s += " " + t.names()[e.name];
  for (std::uint32_t i = 0; i < e.arg_count; ++i) {
    const ca::TraceArg& a = t.args()[e.arg_begin + i];
    s += " [" + std::to_string(a.object) + ":" + std::to_string(a.bytes) + (a.write ? "w" : "r") +
         std::to_string(a.device) + "]";
  }
  return s;
}

}  // namespace

TEST_CASE("trace: records hints, kernels with their arguments' devices, and the mechanism's moves") {
  ca::Runtime rt(test::two_tiers(128 * 1024, 1 << 20), ca::policy::Registry::builtin().make("ca-lm"));
  const ca::Trace& t = rt.start_trace();
  auto a = rt.array<std::byte>(100 * 1024);
  auto b = rt.array<std::byte>(100 * 1024);  // evicts a
  rt.kernel(ca::reads(a), ca::writes(b), [](std::span<const std::byte>, std::span<std::byte>) {});
  a.archive();
  b.retire();
  std::multiset<ca::TraceKind> kinds;
  for (const ca::TraceEvent& e : t.events()) kinds.insert(e.kind);
  CHECK(kinds.count(ca::TraceKind::create) == 2);
  CHECK(kinds.count(ca::TraceKind::kernel_begin) == 1);
  CHECK(kinds.count(ca::TraceKind::kernel_end) == 1);
  CHECK(kinds.count(ca::TraceKind::hint) == 1);
  CHECK(kinds.count(ca::TraceKind::retire) == 1);
  CHECK(kinds.count(ca::TraceKind::evict) >= 1);
  CHECK(kinds.count(ca::TraceKind::copy) >= 1);
  for (const ca::TraceEvent& e : t.events()) {
    if (e.kind != ca::TraceKind::kernel_begin) continue;
    REQUIRE(e.arg_count == 2);
    CHECK(t.args()[e.arg_begin].object == a.id());
    CHECK(!t.args()[e.arg_begin].write);
    CHECK(t.args()[e.arg_begin + 1].write);
    CHECK(t.names()[e.name] == "kernel");
  }
  // Timestamps never go backwards.
  for (std::size_t i = 1; i < t.events().size(); ++i) CHECK(t.events()[i].ns >= t.events()[i - 1].ns);
}

TEST_CASE("trace: the Chrome JSON parses and has one occupancy counter track per heap; CSV has a row per event") {
  ca::Runtime rt(test::two_tiers(128 * 1024, 1 << 20), ca::policy::Registry::builtin().make("ca-lm"));
  const ca::Trace& t = rt.start_trace();
  for (int i = 0; i < 4; ++i) {
    auto x = rt.array<std::byte>(60 * 1024);
    auto y = rt.array<std::byte>(60 * 1024);
    rt.kernel(ca::reads(x), ca::writes(y), [](std::span<const std::byte>, std::span<std::byte>) {});
  }
  std::ostringstream json;
  t.write_chrome_json(json, rt.device_names());
  const nlohmann::json parsed = nlohmann::json::parse(json.str());
  std::set<std::string> counters;
  int slices = 0;
  for (const auto& e : parsed.at("traceEvents")) {
    if (e.at("ph") == "C") counters.insert(e.at("name").get<std::string>());
    if (e.at("ph") == "X") ++slices;
  }
  CHECK(counters == std::set<std::string>{"occupancy fast", "occupancy slow"});
  CHECK(slices == 4);
  std::ostringstream csv;
  t.write_csv(csv);
  std::istringstream lines(csv.str());
  std::string line;
  std::getline(lines, line);
  CHECK(line == "ns,kind,detail,device,device2,object,bytes,name,args");
  std::size_t rows = 0;
  std::size_t initial = 0;
  while (std::getline(lines, line)) {
    if (line.find(",initial,") != std::string::npos)
      ++initial;
    else
      ++rows;
  }
  CHECK(initial == 2);
  CHECK(rows == t.events().size());
}

TEST_CASE("trace: a dry run of a model emits exactly the events of a real run") {
  nn::ModelConfig config;
  config.family = "resnet";
  config.depth = 18;
  config.batch = 2;
  config.image_size = 32;
  config.classes = 4;
  config.width = 0.125;
  const std::uint64_t footprint = nn::measure_footprint([&] { return nn::build_model(config); });
  const std::uint64_t fast = footprint / 3;
  const std::uint64_t slow = 2 * footprint;
  const auto events = [&](bool real) {
    std::vector<ca::DeviceSpec> devices;
    if (real)
      devices = {ca::dram(fast, "fast"), ca::dax_file({}, slow, "slow")};
    else
      devices = {ca::virtual_device(fast, "fast"), ca::virtual_device(slow, "slow")};
    ca::Runtime rt(devices, ca::policy::Registry::builtin().make("ca-lmp"));
    nn::Trainer trainer(&rt, nn::build_model(config), {}, /*run_kernels=*/real);
    const ca::Trace& t = rt.start_trace();
    auto data = nn::synthetic_dataset({3, 32, 32}, 4, 1);
    std::vector<float> images(2 * 3 * 32 * 32);
    std::vector<float> labels(2);
    data->next_batch(images, labels);
    (void)trainer.step(images, labels);
    rt.collect();
    std::vector<std::string> out;
    for (const ca::TraceEvent& e : t.events()) out.push_back(describe(t, e));
    return out;
  };
  const std::vector<std::string> real = events(true);
  const std::vector<std::string> dry = events(false);
  CHECK(real.size() > 500);
  REQUIRE(real.size() == dry.size());
  for (std::size_t i = 0; i < real.size(); ++i) {
    CAPTURE(i);
    REQUIRE(real[i] == dry[i]);
  }
}
