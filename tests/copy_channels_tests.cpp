// The copy hardware every overlap model shares (plan/program/copy_channels.hpp):
// a copy's time from the slower of its source's read and its target's
// write bandwidth, one copy at a time per channel, the mover's lanes taken
// first-free, synchronous copies on their channel without a lane, and the
// backlog an iteration leaves to the next; and the planners' costs giving
// the channels the replay's timeline charges.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

namespace ca = cachedarrays;

namespace {

// Device 0 reads at 10 GB/s and writes at 5; device 1 reads at 2 and
// writes at 1. A gigabyte 0 -> 1 takes 1 s (device 1's write), 1 -> 0
// 0.5 s (device 1's read).
const std::vector<ca::DeviceModel> device_models{{"fast", 10, 5}, {"slow", 2, 1}};
constexpr std::uint64_t gigabyte = 1'000'000'000;

}  // namespace

TEST_CASE("copy channels: a copy takes its bytes over the slower of the source's read and the target's write") {
  const ca::plan::CopyChannels c(device_models, 1);
  CHECK(c.gbps(0, 1) == doctest::Approx(1));
  CHECK(c.gbps(1, 0) == doctest::Approx(2));
  CHECK(c.gbps(0, 0) == doctest::Approx(5));
  CHECK(c.seconds(0, 1, gigabyte) == doctest::Approx(1.0));
  CHECK(c.seconds(1, 0, gigabyte) == doctest::Approx(0.5));
  CHECK(c.seconds(0, 1, 0) == 0.0);
}

TEST_CASE("copy channels: one lane makes one copy at a time, whatever its channel") {
  ca::plan::CopyChannels c(device_models, 1);
  const ca::plan::CopySpan out = c.run_on_mover(0, 1, c.seconds(0, 1, gigabyte), 0);
  const ca::plan::CopySpan in = c.run_on_mover(1, 0, c.seconds(1, 0, gigabyte), 0);
  CHECK(out.start == 0.0);
  CHECK(out.end == doctest::Approx(1.0));
  CHECK(in.start == doctest::Approx(1.0));  // behind the copy out on the one lane
  CHECK(in.end == doctest::Approx(1.5));
  CHECK(c.idle_at() == doctest::Approx(1.5));
}

TEST_CASE("copy channels: two lanes carry copies of two channels side by side, one at a time per channel") {
  ca::plan::CopyChannels c(device_models, 2);
  const ca::plan::CopySpan out = c.run_on_mover(0, 1, 1.0, 0);
  const ca::plan::CopySpan in = c.run_on_mover(1, 0, 0.5, 0);
  CHECK(in.start == 0.0);  // the other lane, the other channel
  CHECK(in.end == doctest::Approx(0.5));
  // A second copy out waits for its channel (free at 1) on the lane that
  // frees first (0.5).
  const ca::plan::CopySpan second = c.run_on_mover(0, 1, 1.0, 0);
  CHECK(second.start == doctest::Approx(out.end));
  CHECK(second.end == doctest::Approx(2.0));
  // Both lanes are now busy until 1 and 2: a copy in waits for the first.
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: with no lane limit each channel is its own engine, as on a duplex link") {
  ca::plan::CopyChannels c(device_models, 0);
  CHECK(c.run_on_mover(0, 1, 1.0, 0).start == 0.0);
  CHECK(c.run_on_mover(1, 0, 0.5, 0).start == 0.0);
  const ca::plan::CopySpan again = c.run_on_mover(0, 1, 1.0, 0.25);
  CHECK(again.start == doctest::Approx(1.0));  // its channel is busy until 1
  CHECK(again.end == doctest::Approx(2.0));
}

TEST_CASE("copy channels: a synchronous copy shares its channel with the mover but takes no lane") {
  ca::plan::CopyChannels c(device_models, 1);
  (void)c.run_on_mover(0, 1, 1.0, 0);
  const ca::plan::CopySpan other = c.run_on_caller(1, 0, 0.5, 0);
  CHECK(other.start == 0.0);  // another channel: the busy lane does not hold it
  const ca::plan::CopySpan same = c.run_on_caller(0, 1, 0.25, 0.5);
  CHECK(same.start == doctest::Approx(1.0));  // its channel carries the mover's copy until 1
  CHECK(same.end == doctest::Approx(1.25));
  // The lane is free at 1: the synchronous copy did not take it.
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: the backlog an iteration leaves is what the next one finds, from its start") {
  ca::plan::CopyChannels c(device_models, 1);
  (void)c.run_on_mover(0, 1, 1.0, 0.5);  // busy from 0.5 to 1.5
  c.carry_over(1.0);                     // the iteration ended at 1
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(0.5));
  CHECK(c.channel_free(0, 1) == doctest::Approx(0.5));
  c.carry_over(10);  // long done: nothing is carried, nothing goes negative
  CHECK(c.idle_at() == 0.0);
  CHECK(c.mover_start(0, 1, 0) == 0.0);
}

TEST_CASE("copy channels: two tiers by their copy bandwidths") {
  const ca::plan::CopyChannels c = ca::plan::CopyChannels::two_tiers(4, 8, 1);
  CHECK(c.devices() == 2);
  CHECK(c.gbps(ca::plan::CopyChannels::fast, ca::plan::CopyChannels::slow) == 4.0);
  CHECK(c.gbps(ca::plan::CopyChannels::slow, ca::plan::CopyChannels::fast) == 8.0);
  CHECK(c.seconds(ca::plan::CopyChannels::fast, ca::plan::CopyChannels::slow, 4 * gigabyte) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: the planners' costs give the channels the replay's timeline charges") {
  // AutoTM's costs from the tiers, as AutotmPolicy makes them.
  const ca::plan::Program program({{gigabyte, true}}, {{"k", {{0, gigabyte, ca::Access::write}}}},
                                  {{ca::plan::StepKind::kernel, 0}});
  const ca::plan::MemoryBound model;
  const ca::emulation::Bandwidth dram{10, 5}, pmm{2, 1};
  const ca::plan::TierCosts costs = ca::plan::TierCosts::from_model(program, model, dram, pmm);
  const ca::plan::CopyChannels planned = costs.channels(1);
  const ca::plan::CopyChannels replayed(device_models, 1);
  for (const auto& [src, dst] : {std::pair<ca::DeviceId, ca::DeviceId>{0, 1}, {1, 0}}) {
    CHECK(planned.gbps(src, dst) == replayed.gbps(src, dst));
    CHECK(planned.seconds(src, dst, 123'456'789) == replayed.seconds(src, dst, 123'456'789));
  }
  // The replay's timeline charges a copy the channels' time.
  ca::plan::CopyTimeline timeline(device_models);
  ca::TraceEvent e;
  e.kind = ca::TraceKind::copy;
  e.object = 1;
  e.device = 0;
  e.device2 = 1;
  e.bytes = 123'456'789;
  timeline.copy(e);
  CHECK(timeline.copy_seconds() == replayed.seconds(0, 1, 123'456'789));
  CHECK(timeline.seconds() == replayed.seconds(0, 1, 123'456'789));
}

TEST_CASE("copy channels: the planners' lanes are the executor's mover threads, and at least one") {
  const ca::plan::Program program({{gigabyte, true}}, {{"k", {{0, gigabyte, ca::Access::write}}}},
                                  {{ca::plan::StepKind::kernel, 0}});
  const ca::plan::MemoryBound model;
  ca::plan::TierCosts costs = ca::plan::TierCosts::from_model(program, model, {10, 5}, {2, 1});
  CHECK(costs.copy_lanes == 1);
  costs.copy_lanes = 2;
  ca::plan::CopyChannels two = costs.channels();
  (void)two.run_on_mover(ca::plan::CopyChannels::fast, ca::plan::CopyChannels::slow, 1.0, 0);
  CHECK(two.mover_start(ca::plan::CopyChannels::slow, ca::plan::CopyChannels::fast, 0) == 0.0);  // a second lane
  costs.copy_lanes = 0;
  CHECK_THROWS_WITH_AS(costs.check(program, "test"), doctest::Contains("copy_lanes"), ca::invalid_argument);
}

TEST_CASE("copy channels: AutoSwap's copies take the channels' time") {
  // Two kernels using a gigabyte each, a gap between the uses of object 0.
  const ca::plan::Program program({{gigabyte, true}, {gigabyte, true}},
                                  {{"a", {{0, gigabyte, ca::Access::read}}},
                                   {"b", {{1, gigabyte, ca::Access::read}}},
                                   {"c", {{1, gigabyte, ca::Access::read}}},
                                   {"d", {{0, gigabyte, ca::Access::read}}}},
                                  {{ca::plan::StepKind::kernel, 0},
                                   {ca::plan::StepKind::kernel, 1},
                                   {ca::plan::StepKind::kernel, 2},
                                   {ca::plan::StepKind::kernel, 3}});
  const ca::plan::MemoryBound model;
  const ca::plan::TierCosts costs = ca::plan::TierCosts::from_model(program, model, {10, 5}, {2, 1});
  ca::plan::AutoswapOptions options;
  options.limit = gigabyte;
  const std::vector<ca::plan::AutoswapCandidate> candidates = ca::plan::autoswap_candidates(program, costs, options);
  REQUIRE_FALSE(candidates.empty());
  const ca::plan::CopyChannels channels = costs.channels();
  for (const ca::plan::AutoswapCandidate& c : candidates) {
    CHECK(c.out_seconds == channels.seconds(ca::plan::CopyChannels::fast, ca::plan::CopyChannels::slow, c.bytes));
    CHECK(c.in_seconds == channels.seconds(ca::plan::CopyChannels::slow, ca::plan::CopyChannels::fast, c.bytes));
  }
}
