// The program of an iteration (plan/program/program.hpp): made from a trace with
// objects named by creation order, recorded by Runtime::record_program and
// handed to the policy, its queries (next use, live bytes, max-live), its
// validation, and its JSON form with errors that name the field.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::Program;
using ca::plan::ProgramArg;
using ca::plan::ProgramKernel;
using ca::plan::ProgramObject;
using ca::plan::ProgramStep;
using ca::plan::StepKind;

namespace {

std::string refusal_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const ca::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A policy that keeps the program it is given (first-touch placement).
class ProgramKeeper final : public test::FastDevicePolicy {
 public:
  std::shared_ptr<const Program> program;
  int programs_given = 0;
  [[nodiscard]] std::string name() const override { return "test-program-keeper"; }
  void on_program(std::shared_ptr<const Program> p) override {
    program = std::move(p);
    ++programs_given;
  }
};

// One iteration of a small program: a persistent weight w (64 B), a
// temporary t (128 B) written from w and read back, an output o (32 B)
// kept alive past the iteration, and an archive hint.
struct Loop {
  ca::Runtime& rt;
  ca::CachedArray<float> w;
  std::vector<ca::CachedArray<float>> outputs;

  explicit Loop(ca::Runtime& runtime) : rt(runtime), w(runtime.array<float>(16)) {}
  void iteration() {
    rt.begin_iteration();
    auto t = rt.array<float>(32);
    rt.kernel(ca::reads(w), ca::writes(t), [](auto in, auto out) { out[0] = in[0]; });
    w.archive();
    auto o = rt.array<float>(8);
    rt.kernel(ca::reads(t), ca::writes(o), [](auto in, auto out) { out[0] = in[0]; });
    t.retire();
    outputs.push_back(std::move(o));
    if (outputs.size() > 1) {
      outputs.front().retire();
      outputs.erase(outputs.begin());
    }
    rt.collect();
  }
};

}  // namespace

TEST_CASE("program: from a trace, objects named persistent first, then by creation order in the iteration") {
  ca::Runtime rt(test::two_tiers());
  rt.start_trace();
  Loop loop(rt);
  for (int i = 0; i < 3; ++i) loop.iteration();
  rt.stop_trace();

  const Program p = Program::from_trace(*rt.trace(), 2);
  // Alive at the start of iteration 2 and used: w, then iteration 1's
  // output (retired), by first use; then t and the new output, in creation
  // order.
  REQUIRE(p.objects().size() == 4);
  CHECK(p.objects()[0] == ProgramObject{64, true});
  CHECK(p.objects()[1] == ProgramObject{32, true});
  CHECK(p.objects()[2] == ProgramObject{128, false});
  CHECK(p.objects()[3] == ProgramObject{32, false});
  REQUIRE(p.kernels().size() == 2);
  CHECK(p.kernels()[0].args == std::vector<ProgramArg>{{0, 64, ca::Access::read}, {2, 128, ca::Access::write}});
  CHECK(p.kernels()[1].args == std::vector<ProgramArg>{{2, 128, ca::Access::read}, {3, 32, ca::Access::write}});
  const std::vector<ProgramStep> steps{
      {StepKind::create, 2}, {StepKind::kernel, 0}, {StepKind::hint, 0, ca::Hint::archive},
      {StepKind::create, 3}, {StepKind::kernel, 1}, {StepKind::retire, 2},
      {StepKind::retire, 1}, {StepKind::collect}};
  CHECK(p.steps() == steps);
  // Every iteration after the first is the same program; the last one runs
  // to the end of the trace.
  CHECK(Program::from_trace(*rt.trace(), 3) == p);
  CHECK(Program::from_trace(*rt.trace()) == p);
  // The first iteration has no earlier output.
  CHECK(Program::from_trace(*rt.trace(), 1).objects().size() == 3);
  // An object alive but untouched is not part of the iteration.
  ca::Runtime idle(test::two_tiers());
  idle.start_trace();
  auto untouched = idle.array<float>(100);
  Loop idle_loop(idle);
  for (int i = 0; i < 2; ++i) idle_loop.iteration();
  CHECK(Program::from_trace(*idle.trace()) == p);

  CHECK(refusal_message([&] { (void)Program::from_trace(*rt.trace(), 7); }).find("no iteration 7") !=
        std::string::npos);
  ca::Trace unmarked;
  CHECK(refusal_message([&] { (void)Program::from_trace(unmarked); }).find("begin_iteration") != std::string::npos);
}

TEST_CASE("program: a persistent object keeps its size through a trace when its first use touches part of it") {
  // Found by fuzz/fuzz_json_readers: object 0 (4097 bytes) is first used by
  // an argument of 4096 bytes; from_trace took the argument's size for the
  // object's, so the program did not survive to_trace.
  const Program p({{4097, true}, {8192, false}},
                  {{"k0", {{0, 4096, ca::Access::read}, {1, 8192, ca::Access::write}}},
                   {"k1", {{0, 4097, ca::Access::read}, {1, 8192, ca::Access::read}}}},
                  {{StepKind::create, 1}, {StepKind::kernel, 0}, {StepKind::kernel, 1}, {StepKind::retire, 1}});
  const Program again = Program::from_trace(p.to_trace());
  CHECK(again.objects() == p.objects());
  CHECK(again == p);
}

TEST_CASE("program: queries — next use, first and last use, live bytes per kernel, max-live") {
  // Kernels: 0 reads a, writes b; 1 reads b, writes c; 2 reads a and c.
  const Program p({{100, true}, {200, false}, {50, false}},
                  {{"k0", {{0, 100, ca::Access::read}, {1, 200, ca::Access::write}}},
                   {"k1", {{1, 200, ca::Access::read}, {2, 50, ca::Access::write}}},
                   {"k2", {{0, 100, ca::Access::read}, {2, 50, ca::Access::read}}}},
                  {{StepKind::create, 1},
                   {StepKind::kernel, 0},
                   {StepKind::create, 2},
                   {StepKind::kernel, 1},
                   {StepKind::retire, 1},
                   {StepKind::kernel, 2},
                   {StepKind::retire, 2}});
  CHECK(p.next_use(0, 0) == 2u);
  CHECK(p.next_use(0, 2) == std::nullopt);
  CHECK(p.next_use(1, 0) == 1u);
  CHECK(p.next_use(1, 1) == std::nullopt);
  CHECK(p.first_use(2) == 1u);
  CHECK(p.last_use(0) == 2u);
  CHECK(p.uses(0) == std::vector<std::uint32_t>{0, 2});
  CHECK(p.live_bytes() == std::vector<std::uint64_t>{300, 350, 150});
  CHECK(p.max_live() == 350);
  CHECK(p.total_bytes() == 350);
  CHECK_THROWS_AS((void)p.uses(3), ca::invalid_argument);
}

TEST_CASE("program: a malformed program is refused with what is wrong") {
  const std::vector<ProgramObject> objects{{8, true}, {8, false}};
  const auto make = [&](std::vector<ProgramStep> steps, std::vector<ProgramKernel> kernels = {}) {
    return refusal_message([&] { (void)Program(objects, std::move(kernels), std::move(steps)); });
  };
  CHECK(make({{StepKind::create, 0}}).find("persistent") != std::string::npos);
  CHECK(make({{StepKind::create, 1}, {StepKind::create, 1}}).find("created twice") != std::string::npos);
  CHECK(make({{StepKind::hint, 1, ca::Hint::will_read}}).find("before it is created") != std::string::npos);
  CHECK(make({{StepKind::retire, 0}, {StepKind::hint, 0, ca::Hint::archive}}).find("after it is retired") !=
        std::string::npos);
  CHECK(make({{StepKind::retire, 5}}).find("out of range") != std::string::npos);
  CHECK(make({}, {{"k", {}}}).find("0 of the 1 kernels") != std::string::npos);
  CHECK(make({{StepKind::kernel, 1}}, {{"a", {}}, {"b", {}}}).find("out of order") != std::string::npos);
  CHECK(make({{StepKind::kernel, 0}}, {{"a", {{0, 9, ca::Access::read}}}}).find("9 bytes") != std::string::npos);
  CHECK(refusal_message([] { (void)Program({{0, true}}, {}, {}); }).find("0 bytes") != std::string::npos);
}

TEST_CASE("program: JSON round trip, files, and errors that name the field") {
  ca::Runtime rt(test::two_tiers());
  rt.start_trace();
  Loop loop(rt);
  for (int i = 0; i < 2; ++i) loop.iteration();
  const Program p = Program::from_trace(*rt.trace());
  CHECK(Program::from_json(p.to_json()) == p);

  const test::ScratchPath scratch("program.json");
  const std::string path = scratch.path.string();
  p.save(path);
  CHECK(Program::load(path) == p);
  std::filesystem::remove(path);
  CHECK_THROWS_AS((void)Program::load(path), ca::heap_error);
  CHECK_THROWS_AS(p.save("/nonexistent-dir/x.json"), ca::heap_error);

  const auto error = [](const std::string& text) { return refusal_message([&] { (void)Program::from_json(text); }); };
  CHECK(error("{").find("not JSON") != std::string::npos);
  CHECK(error(R"({"format":"x","version":1})").find("format") != std::string::npos);
  CHECK(error(R"({"format":"cachedarrays-program","version":2})").find("version") != std::string::npos);
  const std::string head = R"({"format":"cachedarrays-program","version":1,)";
  CHECK(error(head + R"("kernels":[],"steps":[]})").find("objects: is missing") != std::string::npos);
  CHECK(
      error(head + R"("objects":[{"bytes":-1,"persistent":true}],"kernels":[],"steps":[]})").find("objects[0].bytes") !=
      std::string::npos);
  CHECK(error(head + R"("objects":[{"bytes":4}],"kernels":[],"steps":[]})").find("objects[0].persistent") !=
        std::string::npos);
  CHECK(error(head + R"("objects":[{"bytes":4,"persistent":true}],"kernels":[{"name":"k","args":[[0,4,"x"]]}],)"
                     R"("steps":[["kernel",0]]})")
            .find("kernels[0].args[0][2]") != std::string::npos);
  CHECK(error(head + R"("objects":[],"kernels":[],"steps":[["jump",0]]})").find("steps[0][0]") != std::string::npos);
  CHECK(error(head + R"("objects":[{"bytes":4,"persistent":true}],"kernels":[],"steps":[["hint",0,"soon"]]})")
            .find("steps[0][2]") != std::string::npos);
  // Well-formed JSON, inconsistent program: the validation's words.
  CHECK(error(head + R"("objects":[{"bytes":4,"persistent":false}],"kernels":[],"steps":[["retire",0]]})")
            .find("before it is created") != std::string::npos);
}

// A plan is matched to a run's objects by the program's numbering, so a
// document in another numbering is refused, saying how to number them; and
// (the fuzzer's finding) a program read from JSON survives a trace unchanged.
TEST_CASE("program: from_json refuses objects not numbered as a program numbers them") {
  const auto error = [](const std::string& text) { return refusal_message([&] { (void)Program::from_json(text); }); };
  const std::string head = R"({"format":"cachedarrays-program","version":1,)";
  const std::string k01 = R"("kernels":[{"name":"k","args":[[0,4,"r"],[1,4,"w"]]}],)";
  // Canonical: persistent 0 and 1 used in that order, then object 2 created.
  const std::string good = head +
                           R"("objects":[{"bytes":4,"persistent":true},{"bytes":4,"persistent":true},)"
                           R"({"bytes":8,"persistent":false}],)" +
                           k01 + R"("steps":[["kernel",0],["create",2],["retire",2]]})";
  const Program p = Program::from_json(good);
  CHECK_FALSE(p.naming_problem().has_value());
  CHECK(Program::from_trace(p.to_trace()) == p);

  const std::string unused = error(head +
                                   R"("objects":[{"bytes":4,"persistent":true},{"bytes":4,"persistent":true},)"
                                   R"({"bytes":4,"persistent":true}],)" +
                                   k01 + R"("steps":[["kernel",0]]})");
  test::check_contains(unused, "persistent object 2 is never used by the iteration");
  test::check_contains(unused, "leaves out persistent objects it never uses");
  test::check_contains(error(head + R"("objects":[{"bytes":4,"persistent":true},{"bytes":4,"persistent":true}],)"
                                    R"("kernels":[{"name":"k","args":[[1,4,"r"],[0,4,"w"]]}],"steps":[["kernel",0]]})"),
                       "persistent object 1 is first used before persistent object 0");
  test::check_contains(
      error(head + R"("objects":[{"bytes":4,"persistent":false},{"bytes":4,"persistent":true}],)"
                   R"("kernels":[{"name":"k","args":[[1,4,"r"]]}],"steps":[["create",0],["kernel",0]]})"),
      "object 1 is persistent but follows object 0, which the iteration creates");
  test::check_contains(error(head + R"("objects":[{"bytes":4,"persistent":false},{"bytes":4,"persistent":false}],)"
                                    R"("kernels":[],"steps":[["create",1],["create",0]]})"),
                       "object 1 is created before object 0");
  test::check_contains(error(head + R"("objects":[{"bytes":4,"persistent":false}],"kernels":[],"steps":[]})"),
                       "object 0 is neither persistent nor created");
}

TEST_CASE("program: record_program records the next iteration and hands it to the policy") {
  auto keeper = std::make_unique<ProgramKeeper>();
  ProgramKeeper* policy = keeper.get();
  ca::Runtime rt(test::two_tiers(), std::move(keeper));
  Loop loop(rt);
  loop.iteration();
  rt.record_program();
  CHECK(rt.program() == nullptr);
  loop.iteration();  // recorded
  CHECK(rt.program() == nullptr);
  loop.iteration();  // its begin_iteration ends the recording
  REQUIRE(rt.program() != nullptr);
  CHECK(policy->programs_given == 1);
  CHECK(policy->program == rt.program());
  // The trace started for the program is gone; w was created before the
  // recording, so it is known by its first use.
  CHECK(rt.trace() == nullptr);
  CHECK(rt.program()->objects().size() == 4);
  CHECK(rt.program()->objects()[0].bytes == 64);

  // The same program from a full trace of the same loop.
  ca::Runtime traced(test::two_tiers());
  traced.start_trace();
  Loop again(traced);
  for (int i = 0; i < 3; ++i) again.iteration();
  CHECK(Program::from_trace(*traced.trace(), 2) == *rt.program());

  // A user trace stays the user's.
  ca::Runtime both(test::two_tiers());
  both.start_trace();
  both.record_program();
  Loop third(both);
  third.iteration();
  third.iteration();
  CHECK(both.program() != nullptr);
  CHECK(both.trace() != nullptr);

  // set_program hands a given program over.
  auto keeper2 = std::make_unique<ProgramKeeper>();
  ProgramKeeper* policy2 = keeper2.get();
  ca::Runtime given(test::two_tiers(), std::move(keeper2));
  given.set_program(*rt.program());
  CHECK(policy2->programs_given == 1);
  CHECK(*policy2->program == *rt.program());
}

TEST_CASE("program: stop_trace stops the recording of the runtime's events too") {
  ca::Runtime rt(test::two_tiers());
  rt.start_trace();
  auto a = rt.array<float>(4);
  rt.stop_trace();
  const std::size_t events = rt.trace()->events().size();
  auto b = rt.array<float>(4);
  rt.begin_iteration();
  rt.kernel(ca::reads(a), ca::writes(b), [](auto in, auto out) { out[0] = in[0]; });
  a.archive();
  rt.collect();
  CHECK(rt.trace()->events().size() == events);
}

// A recorded program carries the tiers it ran on, so that a model elsewhere
// prices its copies at them: an emulated tier's profile, DRAM at the
// bandwidth the profile was scaled from, and "not known" where nothing
// measured a tier.
TEST_CASE("program: the tiers a program ran on — recorded, saved, read back, and refused when malformed") {
  const auto tier = [](std::string name, std::string device, double read, double write, double latency, bool emulated) {
    return ca::plan::ProgramTier{.name = std::move(name),
                                 .device = std::move(device),
                                 .read_gbps = read,
                                 .write_gbps = write,
                                 .latency_ns = latency,
                                 .emulated = emulated};
  };
  std::vector<ca::DeviceSpec> devices = test::two_tiers();
  devices[1].emulation = test::emulation_profile(4.0, 1.5, 300, 12.0, 9.0);
  devices[1].emulation->name = "optane";
  const std::vector<ca::plan::ProgramTier> tiers = ca::program_tiers(devices);
  REQUIRE(tiers.size() == 2);
  CHECK(tiers[0] == tier("dram", "fast", 12.0, 9.0, 0, false));
  CHECK(tiers[1] == tier("optane", "slow", 4.0, 1.5, 300, true));
  // Without an emulated tier nothing gives DRAM's bandwidth, and a NUMA node
  // or a DAX file on a real file system is not known.
  const std::vector<ca::plan::ProgramTier> plain = ca::program_tiers(
      {ca::dram(1 << 20, "fast"), ca::dax_file("/mnt/pmem0", 1 << 20, "pmem"), ca::numa_node(1, 1 << 20)});
  CHECK(plain[0] == tier("dram", "fast", 0, 0, 0, false));
  CHECK_FALSE(plain[0].bandwidths_known());
  CHECK(plain[1] == tier("pmem", "pmem", 0, 0, 0, false));
  CHECK(plain[2] == tier("numa1", "numa1", 0, 0, 0, false));

  ca::Runtime rt(devices);
  Loop loop(rt);
  loop.iteration();
  rt.record_program();
  loop.iteration();
  loop.iteration();
  REQUIRE(rt.program() != nullptr);
  CHECK(rt.program()->tiers() == tiers);

  // They travel with the program and are no part of its equality.
  const Program& p = *rt.program();
  const Program back = Program::from_json(p.to_json());
  CHECK(back.tiers() == tiers);
  Program without = p;
  without.set_tiers({});
  CHECK(without == p);
  CHECK(Program::from_json(without.to_json()).tiers().empty());

  Program bad = p;
  test::check_contains(refusal_message([&] { bad.set_tiers({tier("optane", "slow", -1, 1, 0, true)}); }),
                       "tier 0 ('optane'): read_gbps is -1");
  CHECK(bad.tiers() == tiers);  // a refused set changes nothing
  std::string text = p.to_json();
  const std::string field = "\"write_gbps\": 1.5";
  REQUIRE(text.find(field) != std::string::npos);
  text.replace(text.find(field), field.size(), "\"write_gbps\": \"fast\"");
  test::check_contains(refusal_message([&] { (void)Program::from_json(text); }), "tiers[1].write_gbps");
}
