// Named kernels and the online profiles of a program's kernels
// (plan/program/online_profile.hpp, runtime/online_profiler.hpp): a user's
// kernels are timed in the iterations after the program is installed, the
// program carries their profiles (also through JSON), and the planner
// policies plan again from them.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cachedarrays/cachedarrays.hpp"
#include "test_kernel_models.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t fast_tier_size = 1 << 20;
constexpr std::uint64_t array_bytes = 256 << 10;

// One iteration: "stencil" reads a and writes b, an unnamed kernel reads b
// and writes c, "stencil" again on c and a.
void stencil_iteration(ca::Runtime& rt, std::vector<ca::CachedArray<std::byte>>& a) {
  rt.begin_iteration();
  const auto touch = [](std::span<const std::byte> in, std::span<std::byte> out) { out[0] = in[0]; };
  rt.kernel("stencil", ca::reads(a[0]), ca::writes(a[1]), touch);
  rt.kernel(ca::reads(a[1]), ca::writes(a[2]), touch);
  rt.kernel(std::string("stencil"), ca::reads(a[2]), ca::writes(a[0]), touch);
}

std::vector<ca::CachedArray<std::byte>> arrays(ca::Runtime& rt, std::size_t n = 3, std::uint64_t bytes = array_bytes) {
  std::vector<ca::CachedArray<std::byte>> a;
  for (std::size_t i = 0; i < n; ++i) a.push_back(rt.array<std::byte>(bytes));
  return a;
}

// Records stencil_iteration's program on `rt`, its kernels profiled for one
// iteration: the program, with its profiles.
const ca::plan::Program& record_profiled(ca::Runtime& rt, std::vector<ca::CachedArray<std::byte>>& a) {
  rt.set_profile_iterations(1);
  rt.record_program();
  for (int i = 0; i < 3; ++i) stencil_iteration(rt, a);
  REQUIRE(rt.program() != nullptr);
  REQUIRE(rt.program()->profiles() != nullptr);
  return *rt.program();
}

ca::DeviceSpec emulated_slow(std::uint64_t capacity) {
  ca::DeviceSpec slow_spec = ca::dax_file({}, capacity, "slow");
  slow_spec.emulation = test::emulation_profile(10.0, 5.0, 0.0, 30.0, 15.0);
  return slow_spec;
}

}  // namespace

TEST_CASE("online profiles: a named kernel is traced and recorded under its name, an unnamed one as kernel") {
  ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20));
  auto a = arrays(rt);
  const ca::Trace& trace = rt.start_trace();
  rt.record_program();
  stencil_iteration(rt, a);
  stencil_iteration(rt, a);
  const std::vector<std::string>& names = trace.names();
  CHECK(std::count(names.begin(), names.end(), "stencil") == 1);
  CHECK(std::count(names.begin(), names.end(), "kernel") == 1);
  const std::shared_ptr<const ca::plan::Program> program = rt.program();
  REQUIRE(program != nullptr);
  REQUIRE(program->kernels().size() == 3);
  CHECK(program->kernels()[0].name == "stencil");
  CHECK(program->kernels()[1].name == "kernel");
  CHECK(program->kernels()[2].name == "stencil");
  // A name must name something.
  const auto touch = [](std::span<const std::byte>, std::span<std::byte>) {};
  CHECK_THROWS_AS(rt.kernel("", ca::reads(a[0]), ca::writes(a[1]), touch), ca::invalid_argument);
  CHECK_THROWS_AS(rt.kernel(static_cast<const char*>(nullptr), ca::reads(a[0]), ca::writes(a[1]), touch),
                  ca::invalid_argument);
}

TEST_CASE("online profiles: a named kernel is keyed by its name, an unnamed one by its place and argument sizes") {
  const ca::plan::Program program({{100, true}, {200, true}},
                                  {{"stencil", {{0, 100, ca::Access::read}}},
                                   {"kernel", {{0, 100, ca::Access::read}, {1, 200, ca::Access::write}}}},
                                  {{ca::plan::StepKind::kernel, 0}, {ca::plan::StepKind::kernel, 1}});
  CHECK(ca::plan::profile_key(program, 0) == "stencil");
  CHECK(ca::plan::profile_key(program, 1) == "kernel#1(100r,200w)");
  CHECK_THROWS_AS((void)ca::plan::profile_key(program, 2), ca::invalid_argument);
  const ca::plan::Program keyed = ca::plan::profile_keyed(program);
  CHECK(keyed.kernels()[1].name == "kernel#1(100r,200w)");
  CHECK(keyed.kernels()[1].args == program.kernels()[1].args);
  CHECK(program.kernels()[1].name == "kernel");  // the program keeps the recorded name
}

TEST_CASE("online profiles: collected for each program kernel after the profiled iterations, not before") {
  ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20));
  rt.set_profile_iterations(2);
  auto a = arrays(rt);
  rt.record_program();
  stencil_iteration(rt, a);  // 1: recorded
  stencil_iteration(rt, a);  // 2: the program is installed; profiled
  REQUIRE(rt.program() != nullptr);
  CHECK(rt.program()->profiles() == nullptr);
  stencil_iteration(rt, a);  // 3: profiled
  CHECK(rt.program()->profiles() == nullptr);
  stencil_iteration(rt, a);  // 4: the profiles arrived at its begin
  const ca::plan::KernelProfiles* profiles = rt.program()->profiles();
  REQUIRE(profiles != nullptr);
  CHECK(profiles->kernels().size() == 2);  // "stencil" (two places) and the unnamed kernel
  const std::string unnamed = ca::plan::profile_key(*rt.program(), 1);
  for (const std::string& key : {std::string("stencil"), unnamed}) {
    const ca::plan::KernelProfile* p = profiles->find(key);
    REQUIRE_MESSAGE(p != nullptr, key);
    CHECK(p->fast_seconds > 0);
    CHECK(p->slow_seconds > p->fast_seconds);
    CHECK(p->bytes_read == array_bytes);
    CHECK(p->bytes_written == array_bytes);
    // No emulation: the slow tier's cost is the bandwidth model's.
    const auto fast = ca::emulation::published::ddr4_six_channel;
    const auto slow = ca::emulation::published::optane_six_dimms;
    const double b = static_cast<double>(array_bytes);
    const double extra = (b / slow.read_gbps - b / fast.read_gbps + b / slow.write_gbps - b / fast.write_gbps) * 1e-9;
    CHECK(p->slow_seconds - p->fast_seconds == doctest::Approx(extra));
  }
  // The program is the same program, now measured.
  stencil_iteration(rt, a);
  CHECK(rt.program()->profiles() == profiles);
}

TEST_CASE("online profiles: none are taken when profiling is off, or for a program that brings its own") {
  SUBCASE("off") {
    ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20));
    rt.set_profile_iterations(0);
    auto a = arrays(rt);
    rt.record_program();
    for (int i = 0; i < 6; ++i) stencil_iteration(rt, a);
    REQUIRE(rt.program() != nullptr);
    CHECK(rt.program()->profiles() == nullptr);
  }
  SUBCASE("given with profiles") {
    ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20));
    auto a = arrays(rt);
    rt.record_program();
    stencil_iteration(rt, a);
    stencil_iteration(rt, a);
    ca::plan::Program program = *rt.program();
    ca::plan::KernelProfiles given;
    given.set("stencil", {.fast_seconds = 1, .slow_seconds = 2});
    program.set_profiles(given);
    rt.set_program(program);
    for (int i = 0; i < 5; ++i) stencil_iteration(rt, a);
    REQUIRE(rt.program()->profiles() != nullptr);
    CHECK(*rt.program()->profiles() == given);
  }
}

TEST_CASE("online profiles: with an emulated slow tier, a kernel's slow time adds the charge of all its arguments") {
  // The fast tier holds one array; the other two go to the emulated tier.
  ca::Runtime rt({ca::dram(array_bytes + (64 << 10), "fast"), emulated_slow(8 << 20)});
  rt.set_profile_iterations(1);
  auto a = arrays(rt);
  {
    auto guard = rt.lock();
    CHECK(rt.manager().device(*rt.manager().getprimary(a[1].object())) == 1);
  }
  rt.record_program();
  stencil_iteration(rt, a);
  stencil_iteration(rt, a);  // profiled
  stencil_iteration(rt, a);
  const ca::plan::KernelProfiles* profiles = rt.program()->profiles();
  REQUIRE(profiles != nullptr);
  CHECK(profiles->key().slow_tier == "test");
  const ca::EmulationProfile p = test::emulation_profile(10.0, 5.0, 0.0, 30.0, 15.0);
  const double all_slow = (ca::emulation::kernel_extra_ns(p, array_bytes, ca::Access::read) +
                           ca::emulation::kernel_extra_ns(p, array_bytes, ca::Access::write)) *
                          1e-9;
  REQUIRE(all_slow > 0);
  // The unnamed kernel reads b, which lies in the emulated tier.
  const ca::plan::KernelProfile* k = profiles->find(ca::plan::profile_key(*rt.program(), 1));
  REQUIRE(k != nullptr);
  CHECK(k->fast_seconds >= 0);
  CHECK(k->slow_seconds > k->fast_seconds);
  CHECK(k->slow_seconds - k->fast_seconds == doctest::Approx(all_slow));
}

TEST_CASE("online profiles: the program JSON round-trips with them, and JSON without them still loads") {
  ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20));
  auto a = arrays(rt);
  const ca::plan::Program& program = record_profiled(rt, a);
  const ca::plan::Program back = ca::plan::Program::from_json(program.to_json());
  CHECK(back == program);
  REQUIRE(back.profiles() != nullptr);
  CHECK(*back.profiles() == *program.profiles());

  // As a program was saved before it had profiles.
  nlohmann::json old = nlohmann::json::parse(program.to_json());
  old.erase("profiles");
  const ca::plan::Program plain = ca::plan::Program::from_json(old.dump());
  CHECK(plain == program);
  CHECK(plain.profiles() == nullptr);
  CHECK(nlohmann::json::parse(plain.to_json()).contains("profiles") == false);

  // Malformed profiles name the field.
  nlohmann::json bad = nlohmann::json::parse(program.to_json());
  bad["profiles"]["kernels"]["stencil"]["fast_seconds"] = "fast";
  try {
    (void)ca::plan::Program::from_json(bad.dump());
    FAIL("malformed profiles were accepted");
  } catch (const ca::invalid_argument& e) {
    CHECK(std::string(e.what()).find("profiles") != std::string::npos);
  }
}

namespace {

struct Planned {
  std::unique_ptr<ca::Runtime> rt;
  ca::policy::AutotmPolicy* policy = nullptr;
  std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
};

Planned planned(ca::policy::AutotmPolicyOptions options) {
  options.fast_tier = {30, 15};
  options.slow_tier = {10, 5};
  Planned p;
  options.log = [log = p.log](const std::string& line) { log->push_back(line); };
  auto policy = std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
  p.policy = policy.get();
  p.rt = std::make_unique<ca::Runtime>(test::two_tiers(fast_tier_size, 8 << 20), std::move(policy));
  p.rt->set_profile_iterations(2);
  return p;
}

}  // namespace

TEST_CASE("online profiles: a planner policy plans again from them once they arrive") {
  SUBCASE("autotm-sync") {
    ca::policy::AutotmPolicyOptions options;
    options.solver.formulation = ca::plan::AutotmFormulation::synchronous;
    Planned p = planned(std::move(options));
    auto a = arrays(*p.rt);
    p.rt->record_program();
    stencil_iteration(*p.rt, a);
    stencil_iteration(*p.rt, a);  // planned from the recording: memory-bound
    CHECK(p.policy->counters().plans == 1);
    CHECK(p.policy->counters().profiled_plans == 0);
    stencil_iteration(*p.rt, a);
    CHECK(p.policy->counters().plans == 1);
    stencil_iteration(*p.rt, a);  // the profiles arrived: planned again from them
    CHECK(p.policy->counters().plans == 2);
    CHECK(p.policy->counters().profiled_plans == 1);
    const auto planning = [](const std::string& line) { return line.find(": planning ") != std::string::npos; };
    REQUIRE(std::count_if(p.log->begin(), p.log->end(), planning) == 2);
    CHECK(std::find_if(p.log->begin(), p.log->end(), planning)->find("online profiles") == std::string::npos);
    CHECK(std::find_if(p.log->rbegin(), p.log->rend(), planning)->find("online profiles") != std::string::npos);
    REQUIRE(p.policy->plan() != nullptr);
    // Priced by the measured kernels, not by bytes over bandwidth.
    const ca::plan::Program& program = *p.rt->program();
    const ca::plan::KernelProfiles& profiles = *program.profiles();
    double all_fast = 0;
    for (std::uint32_t k = 0; k < program.kernels().size(); ++k) {
      all_fast += profiles.find(ca::plan::profile_key(program, k))->fast_seconds;
    }
    CHECK(p.policy->plan()->modeled_seconds >= all_fast * (1 - 1e-9));
    for (int i = 0; i < 3; ++i) stencil_iteration(*p.rt, a);
    CHECK(p.policy->counters().plans == 2);  // once
    CHECK(p.policy->counters().departures == 0);
  }
  SUBCASE("a given time model keeps its plan") {
    ca::policy::AutotmPolicyOptions options;
    options.solver.formulation = ca::plan::AutotmFormulation::synchronous;
    options.time_model = std::make_shared<test::MillisecondPerSlowArgument>(1e-3);
    Planned p = planned(std::move(options));
    auto a = arrays(*p.rt);
    p.rt->record_program();
    for (int i = 0; i < 6; ++i) stencil_iteration(*p.rt, a);
    REQUIRE(p.rt->program()->profiles() != nullptr);
    CHECK(p.policy->counters().plans == 1);
    CHECK(p.policy->counters().profiled_plans == 0);
  }
  SUBCASE("autoswap and redl, made by the registry") {
    for (const char* name : {"autoswap:swdoa", "redl"}) {
      CAPTURE(name);
      std::unique_ptr<ca::policy::Policy> made = ca::policy::Registry::builtin().make(name);
      auto* policy = dynamic_cast<ca::policy::AutotmPolicy*>(made.get());
      REQUIRE(policy != nullptr);
      ca::Runtime rt(test::two_tiers(fast_tier_size, 8 << 20), std::move(made));
      rt.set_profile_iterations(1);
      auto a = arrays(rt);
      rt.record_program();
      stencil_iteration(rt, a);
      stencil_iteration(rt, a);
      CHECK(policy->counters().profiled_plans == 0);
      stencil_iteration(rt, a);
      CHECK(policy->counters().profiled_plans == 1);
      CHECK(policy->counters().plans == 2);
    }
  }
}

// A saved program is replayed as it ran (sim/saved_program.hpp): its kernels
// named by the keys of their profiles, the tiers it ran on as the replay's
// device models, and repeated for the steady state only when its iteration
// can repeat.
TEST_CASE(
    "saved program: kernels keyed as their profiles, the tiers it ran on as device models, repeats only if it can") {
  ca::Runtime rt({ca::dram(fast_tier_size, "fast"), emulated_slow(8 << 20)});
  auto a = arrays(rt);
  const ca::plan::Program& program = record_profiled(rt, a);

  const ca::SavedProgram saved = ca::saved_program(program);
  CHECK_FALSE(saved.unrepeatable.has_value());
  REQUIRE(saved.profiles.has_value());
  REQUIRE(saved.program.kernels().size() == program.kernels().size());
  for (const ca::plan::ProgramKernel& k : saved.program.kernels()) {
    INFO(k.name);
    CHECK(saved.profiles->find(k.name) != nullptr);
  }
  const auto iterations = std::count_if(saved.trace.events().begin(), saved.trace.events().end(),
                                        [](const ca::TraceEvent& e) { return e.kind == ca::TraceKind::iteration; });
  CHECK(iterations == ca::steady_replay_iterations);
  CHECK(saved.footprint >= program.max_live());

  const auto models = ca::tier_models(saved.tiers);
  REQUIRE(models.has_value());
  CHECK(models->first.read_gbps == 30.0);
  CHECK(models->first.write_gbps == 15.0);
  CHECK(models->second.read_gbps == 10.0);
  CHECK(models->second.write_gbps == 5.0);
  // DRAM beside no emulated tier has no bandwidths, so no models.
  CHECK_FALSE(ca::tier_models(ca::program_tiers(test::two_tiers())).has_value());

  // An iteration that keeps what it creates cannot repeat: replayed once.
  const ca::plan::Program keeps({{4, false}}, {}, {{ca::plan::StepKind::create, 0, {}}});
  const ca::SavedProgram once = ca::saved_program(keeps);
  REQUIRE(once.unrepeatable.has_value());
  CHECK(std::count_if(once.trace.events().begin(), once.trace.events().end(),
                      [](const ca::TraceEvent& e) { return e.kind == ca::TraceKind::iteration; }) == 1);
  CHECK_THROWS_AS((void)ca::saved_program(program, 0), ca::invalid_argument);
}
