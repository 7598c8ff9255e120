// The replay simulator: a recorded run replayed onto virtual devices of the
// same capacities under the same policy reproduces the run's traffic exactly;
// other policies give other traffic; the time model's arithmetic; bad traces.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/sim/replay.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

nn::ModelConfig replayed_resnet() {
  nn::ModelConfig config;
  config.family = "resnet";
  config.depth = 18;
  config.batch = 2;
  config.image_size = 32;
  config.classes = 4;
  config.width = 0.125;
  return config;
}

const std::vector<ca::DeviceModel> replay_models{{"fast", 100, 80}, {"slow", 30, 10}};

// One training iteration and a collect, recorded from before the model
// exists until after it is gone, so the trace holds every object's life.
struct Recording {
  ca::Trace trace;
  ca::Stats stats;
  std::uint64_t fast = 0;
  std::uint64_t slow = 0;
};

Recording record_real_run(const std::string& policy) {
  const nn::ModelConfig config = replayed_resnet();
  const std::uint64_t footprint = nn::measure_footprint([&] { return nn::build_model(config); });
  Recording rec;
  rec.fast = footprint / 3;
  rec.slow = 2 * footprint;
  ca::Runtime rt({ca::dram(rec.fast, "fast"), ca::dax_file({}, rec.slow, "slow")},
                 ca::policy::Registry::builtin().make(policy));
  rt.start_trace();
  {
    nn::Trainer trainer(&rt, nn::build_model(config), {}, /*run_kernels=*/true);
    auto data = nn::synthetic_dataset({3, 32, 32}, 4, 1);
    std::vector<float> images(2 * 3 * 32 * 32);
    std::vector<float> labels(2);
    data->next_batch(images, labels);
    (void)trainer.step(images, labels);
    rt.collect();
  }
  rt.collect();
  rec.trace = *rt.trace();
  rec.stats = rt.stats();
  return rec;
}

void check_same_traffic(const ca::Stats& real, const ca::Stats& replayed) {
  for (std::size_t s = 0; s < ca::max_devices; ++s) {
    for (std::size_t d = 0; d < ca::max_devices; ++d) {
      CAPTURE(s);
      CAPTURE(d);
      CHECK(real.bytes_copied[s][d] == replayed.bytes_copied[s][d]);
      CHECK(real.copies[s][d] == replayed.copies[s][d]);
    }
    CHECK(real.kernel_bytes_read[s] == replayed.kernel_bytes_read[s]);
    CHECK(real.kernel_bytes_written[s] == replayed.kernel_bytes_written[s]);
    CHECK(real.policy.bytes_written[s] == replayed.policy.bytes_written[s]);
  }
  REQUIRE(real.devices.size() == replayed.devices.size());
  for (std::size_t d = 0; d < real.devices.size(); ++d) {
    CAPTURE(d);
    for (const auto& field : ca::DeviceCounters::event_fields()) {
      CAPTURE(field.name);
      CHECK(real.devices[d].*field.member == replayed.devices[d].*field.member);
    }
    CHECK(real.devices[d].peak_bytes_in_use == replayed.devices[d].peak_bytes_in_use);
  }
  CHECK(real.objects_created == replayed.objects_created);
  CHECK(real.objects_destroyed == replayed.objects_destroyed);
  CHECK(real.accesses == replayed.accesses);
  for (const auto& field : ca::PolicyCounters::fields()) {
    CAPTURE(field.name);
    CHECK(real.policy.*field.member == replayed.policy.*field.member);
  }
}

// Hand-made traces.
using test::create, test::retire;

std::string replay_error(const ca::Trace& t) {
  ca::Runtime target({ca::virtual_device(1 << 20, "fast"), ca::virtual_device(1 << 20, "slow")});
  return test::invalid_argument_of([&] { (void)ca::replay(t, target, replay_models); });
}

}  // namespace

TEST_CASE("replay: replaying a recorded trace reproduces the real run's traffic counters exactly") {
  for (const char* policy : {"ca-lmp", "ca-lm"}) {
    CAPTURE(policy);
    const Recording rec = record_real_run(policy);
    REQUIRE(rec.stats.total_bytes_copied() > 0);  // the budget is tight enough to move data
    ca::Runtime target({ca::virtual_device(rec.fast, "fast"), ca::virtual_device(rec.slow, "slow")},
                       ca::policy::Registry::builtin().make(policy));
    const ca::ReplayResult r = ca::replay(rec.trace, target, replay_models);
    check_same_traffic(rec.stats, r.stats);
    CHECK(r.stats.devices[0].bytes_in_use == 0);
    CHECK(r.stats.devices[1].bytes_in_use == 0);
    CHECK(r.kernels > 50);
    CHECK(r.modeled_seconds > 0);
  }
}

TEST_CASE("replay: another policy gives other traffic") {
  const Recording rec = record_real_run("ca-lmp");
  const auto run = [&](const char* policy) {
    ca::Runtime target({ca::virtual_device(rec.fast, "fast"), ca::virtual_device(rec.slow, "slow")},
                       ca::policy::Registry::builtin().make(policy));
    return ca::replay(rec.trace, target, replay_models);
  };
  const ca::ReplayResult lmp = run("ca-lmp");
  const ca::ReplayResult slow = run("all-slow");
  const ca::ReplayResult first = run("first-touch");
  CHECK(lmp.stats.total_bytes_copied() > 0);
  CHECK(slow.stats.total_bytes_copied() == 0);
  CHECK(first.stats.total_bytes_copied() == 0);
  CHECK(slow.stats.kernel_bytes_read[0] == 0);
  CHECK(slow.stats.kernel_bytes_read[1] == lmp.stats.kernel_bytes_read[0] + lmp.stats.kernel_bytes_read[1]);
  CHECK(slow.kernels == lmp.kernels);
  CHECK(slow.copy_seconds == 0);
  // Everything at the slow tier's bandwidth is slower than the hinted run's kernels.
  CHECK(slow.kernel_seconds > lmp.kernel_seconds);
}

TEST_CASE("replay: modeled time is bytes over the bandwidth of the device each argument is on") {
  ca::Trace t;
  create(t, 1, 1000);  // first-touch: fast (1 KiB)
  create(t, 2, 1000);  // slow
  t.record_kernel("k", {{1, 1000, false, 0}, {2, 1000, true, 1}});
  t.record({.kind = ca::TraceKind::kernel_end, .name = t.intern("k")});
  t.record_kernel("read()", {{2, 1000, false, 1}});  // a scoped access: no end event
  retire(t, 1);
  ca::Runtime target({ca::virtual_device(1024, "fast"), ca::virtual_device(1 << 20, "slow")});
  const ca::ReplayResult r = ca::replay(t, target, replay_models);
  CHECK(r.kernels == 2);
  const double expected = (1000 / 100.0 + 1000 / 10.0 + 1000 / 30.0) * 1e-9;
  CHECK(r.kernel_seconds == doctest::Approx(expected));
  CHECK(r.copy_seconds == 0);
  CHECK(r.modeled_seconds == doctest::Approx(expected));
  CHECK(r.stats.objects_created == 2);
  CHECK(r.stats.objects_destroyed == 2);  // object 2 retired at the end
  CHECK(r.stats.kernel_bytes_read[0] == 1000);
  CHECK(r.stats.kernel_bytes_read[1] == 1000);
  CHECK(r.stats.kernel_bytes_written[1] == 1000);

  SUBCASE("copies: bytes over the slower of source read and destination write") {
    ca::Stats s;
    s.bytes_copied[1][0] = 3'000'000'000;  // slow read 30 < fast write 80
    s.bytes_copied[0][1] = 1'000'000'000;  // slow write 10 < fast read 100
    CHECK(ca::modeled_copy_seconds(s, replay_models) == doctest::Approx(0.1 + 0.1));
  }
  SUBCASE("a policy that moves data is charged for its copies") {
    ca::Trace m;
    create(m, 1, 600);
    m.record_kernel("write()", {{1, 600, true, 0}});
    create(m, 2, 600);  // the fast device (1 KiB) holds one: ca-l evicts object 1
    m.record_kernel("read()", {{1, 600, false, 1}});
    ca::Runtime moving({ca::virtual_device(1024, "fast"), ca::virtual_device(1 << 20, "slow")},
                       ca::policy::Registry::builtin().make("ca-l"));
    const ca::ReplayResult c = ca::replay(m, moving, replay_models);
    CHECK(c.stats.total_bytes_copied() > 0);
    CHECK(c.copy_seconds > 0);
    CHECK(c.copy_seconds == doctest::Approx(ca::modeled_copy_seconds(c.stats, replay_models)));
    CHECK(c.modeled_seconds == doctest::Approx(c.kernel_seconds + c.copy_seconds));
  }
}

TEST_CASE("replay: with the roofline, a kernel takes the larger of its compute and memory time") {
  ca::Trace t;
  create(t, 1, 1000);  // first-touch: fast (1 KiB)
  create(t, 2, 1000);  // slow
  // 10 us of compute at 1 GFLOP/s; 110 ns of memory on these devices.
  const std::string dense = ca::plan::make_signature("conv", {}, 10'000);
  t.record_kernel(dense, {{1, 1000, false, 0}, {2, 1000, true, 1}});
  t.record({.kind = ca::TraceKind::kernel_end, .name = t.intern(dense)});
  // 1 ns of compute: memory-bound.
  t.record_kernel("relu flops=1", {{1, 1000, false, 0}, {2, 1000, true, 1}});
  t.record({.kind = ca::TraceKind::kernel_end, .name = t.intern("relu flops=1")});
  const auto run = [&](const ca::plan::KernelTimeModel* model) {
    ca::Runtime target({ca::virtual_device(1024, "fast"), ca::virtual_device(1 << 20, "slow")});
    return ca::replay(t, target, replay_models, model);
  };
  const ca::plan::Roofline roofline(1e9, {replay_models[0].read_gbps, replay_models[0].write_gbps});
  const double memory = (1000 / 100.0 + 1000 / 10.0) * 1e-9;
  const ca::ReplayResult r = run(&roofline);
  CHECK(r.kernel_seconds == doctest::Approx(10'000e-9 + memory));
  CHECK(r.kernel_seconds >= roofline.compute_seconds(dense) + roofline.compute_seconds("relu flops=1"));
  // Without a model (and through the three-argument call) every kernel is memory-bound.
  CHECK(run(nullptr).kernel_seconds == doctest::Approx(2 * memory));
  ca::Runtime target({ca::virtual_device(1024, "fast"), ca::virtual_device(1 << 20, "slow")});
  CHECK(ca::replay(t, target, replay_models).kernel_seconds == doctest::Approx(2 * memory));
}

TEST_CASE("replay: a recorded model under the roofline takes at least its compute and its memory bound") {
  const Recording rec = record_real_run("ca-lmp");
  double compute = 0;
  for (const ca::TraceEvent& e : rec.trace.events()) {
    if (e.kind == ca::TraceKind::kernel_begin) {
      compute += static_cast<double>(ca::plan::kernel_flops(rec.trace.names()[e.name])) / 1e9;
    }
  }
  REQUIRE(compute > 0);
  const ca::plan::Roofline roofline(1e9, {replay_models[0].read_gbps, replay_models[0].write_gbps});
  const auto run = [&](const ca::plan::KernelTimeModel* model) {
    ca::Runtime target({ca::virtual_device(rec.fast, "fast"), ca::virtual_device(rec.slow, "slow")},
                       ca::policy::Registry::builtin().make("all-slow"));
    return ca::replay(rec.trace, target, replay_models, model);
  };
  const ca::ReplayResult with_roofline = run(&roofline);
  const ca::ReplayResult memory_bound = run(nullptr);
  CHECK(with_roofline.kernel_seconds >= compute);
  CHECK(with_roofline.kernel_seconds >= memory_bound.kernel_seconds);
  CHECK(with_roofline.kernel_seconds < compute + memory_bound.kernel_seconds);  // max, not sum: some overlap
  CHECK(with_roofline.copy_seconds == memory_bound.copy_seconds);
  CHECK(with_roofline.kernels == memory_bound.kernels);
}

TEST_CASE("replay: a bad trace is rejected naming the event") {
  SUBCASE("a kernel argument the trace never created") {
    ca::Trace t;
    create(t, 1, 64);
    t.record_kernel("k", {{1, 64, false, 0}, {42, 64, true, 0}});
    const std::string what = replay_error(t);
    CHECK(what.find("event 1") != std::string::npos);
    CHECK(what.find("#42") != std::string::npos);
    CHECK(what.find("unknown") != std::string::npos);
  }
  SUBCASE("a retire of a retired object") {
    ca::Trace t;
    create(t, 1, 64);
    retire(t, 1);
    retire(t, 1);
    CHECK(replay_error(t).find("event 2") != std::string::npos);
  }
  SUBCASE("a hint for an unknown object") {
    ca::Trace t;
    t.record({.kind = ca::TraceKind::hint, .detail = 3, .object = 5});
    CHECK(replay_error(t).find("event 0") != std::string::npos);
  }
  SUBCASE("an object created twice") {
    ca::Trace t;
    create(t, 1, 64);
    create(t, 1, 64);
    CHECK(replay_error(t).find("created twice") != std::string::npos);
  }
  SUBCASE("too few device models, or a zero bandwidth") {
    ca::Trace t;
    ca::Runtime target({ca::virtual_device(1 << 20, "fast"), ca::virtual_device(1 << 20, "slow")});
    CHECK_THROWS_AS((void)ca::replay(t, target, {replay_models[0]}), ca::invalid_argument);
    CHECK_THROWS_AS((void)ca::replay(t, target, {replay_models[0], {"slow", 0, 1}}), ca::invalid_argument);
  }
}

TEST_CASE("replay: the steady window skips two warm-up iterations and the last one") {
  CHECK(ca::steady_window(0).iterations() == 0);  // no iterations: the whole replay
  CHECK(ca::steady_window(1).iterations() == 0);
  const auto window = [](std::size_t marks) {
    const ca::SteadyWindow w = ca::steady_window(marks);
    return std::pair{w.first, w.end};
  };
  CHECK(window(2) == std::pair<std::size_t, std::size_t>{0, 1});
  CHECK(window(3) == std::pair<std::size_t, std::size_t>{1, 2});
  CHECK(window(4) == std::pair<std::size_t, std::size_t>{2, 3});
  CHECK(window(5) == std::pair<std::size_t, std::size_t>{2, 4});
  CHECK(window(8) == std::pair<std::size_t, std::size_t>{2, 7});
}

TEST_CASE("replay: the steady iteration is the mean of the iterations in the window, its counters theirs alone") {
  // Iteration i (1..5) reads an object of i * 1000 bytes once on the fast
  // device: 10 + 10 i ns (the second kernel of 1000 bytes in every one).
  ca::Trace t;
  for (std::uint64_t i = 1; i <= 5; ++i) {
    t.record({.kind = ca::TraceKind::iteration, .object = i});
    create(t, i, i * 1000);
    t.record_kernel("read()", {{i, i * 1000, false, 0}});
    create(t, 100 + i, 1000);
    t.record_kernel("read()", {{100 + i, 1000, false, 0}});
    retire(t, i);
    retire(t, 100 + i);
  }
  ca::Runtime target({ca::virtual_device(1 << 20, "fast"), ca::virtual_device(1 << 20, "slow")});
  const ca::ReplayResult r = ca::replay(t, target, replay_models);
  REQUIRE(r.iterations.size() == 5);
  CHECK(r.iterations[0].seconds == 0);
  CHECK(r.iterations[1].seconds == doctest::Approx(20e-9));  // after iteration 1: 1000 + 1000 bytes
  CHECK(r.iterations[4].stats.kernel_bytes_read[0] == (1 + 2 + 3 + 4) * 1000 + 4 * 1000);
  const ca::ReplayIteration steady = ca::steady_iteration(r);
  CHECK(steady.iterations == 2);  // the third and the fourth
  CHECK(steady.seconds == doctest::Approx((40e-9 + 50e-9) / 2));
  CHECK(steady.stats.kernel_bytes_read[0] == 3000 + 1000 + 4000 + 1000);
  CHECK(steady.exposed_copy_seconds == 0);
  CHECK(steady.kernel_seconds == doctest::Approx(steady.seconds));  // no copies: the kernels are the time

  SUBCASE("a trace of one iteration is the whole replay") {
    ca::Trace one;
    one.record({.kind = ca::TraceKind::iteration, .object = 1});
    create(one, 1, 1000);
    one.record_kernel("read()", {{1, 1000, false, 0}});
    ca::Runtime fresh({ca::virtual_device(1 << 20, "fast"), ca::virtual_device(1 << 20, "slow")});
    const ca::ReplayResult whole = ca::replay(one, fresh, replay_models);
    const ca::ReplayIteration it = ca::steady_iteration(whole);
    CHECK(it.iterations == 1);
    CHECK(it.seconds == whole.modeled_seconds);
    CHECK(it.stats.kernel_bytes_read[0] == 1000);
  }
}

TEST_CASE("replay: a dry run's steady all-fast iteration takes exactly its program's kernels") {
  const auto build = [] { return nn::build_model(replayed_resnet()); };
  CHECK(test::invalid_argument_of([&] { (void)nn::dry_run_trace(build, {}, 0); }).find("at least 1 iteration") !=
        std::string::npos);
  const ca::Trace trace = nn::dry_run_trace(build, {}, nn::steady_trace_iterations);
  const ca::plan::Program program = ca::plan::Program::from_trace(trace, nn::steady_trace_iteration);
  const auto all_fast = [&](const ca::Trace& tr) {
    ca::Runtime rt({ca::virtual_device(std::uint64_t{1} << 30, "fast"), ca::virtual_device(1 << 20, "slow")});
    return ca::replay(tr, rt, replay_models);
  };
  const ca::ReplayResult steady = all_fast(trace);
  CHECK(steady.iterations.size() == nn::steady_trace_iterations);
  // The program's iteration replayed alone: the same kernels on the same
  // device, so the same time.
  const ca::ReplayResult alone = all_fast(program.to_trace());
  CHECK(ca::steady_iteration(steady).seconds == doctest::Approx(alone.modeled_seconds).epsilon(1e-12));
  // The first training iteration is already the steady one: what the trainer
  // keeps (parameters, momentum) is made before it, and a kernel's oneDNN
  // scratchpad is its own, made and retired around it. (A scratchpad
  // shared by every kernel and grown on demand would make the first
  // iteration create it.)
  CHECK(ca::plan::Program::from_trace(trace, 1) == program);
  const double first = steady.iterations[1].seconds - steady.iterations[0].seconds;
  CHECK(first == doctest::Approx(alone.modeled_seconds).epsilon(1e-12));
}
