// The copy hardware every overlap model shares (plan/schedule/copy_channels.hpp):
// a copy's time from the slower of its source's read and its target's
// write bandwidth, one copy at a time per channel, the mover's lanes taken
// first-free, synchronous copies on their channel without a lane, and the
// backlog an iteration leaves to the next; and the planners' costs giving
// the channels the replay's timeline charges.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/plan/schedule/copy_channels.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

namespace ca = cachedarrays;

namespace {

// Device 0 reads at 10 GB/s and writes at 5; device 1 reads at 2 and
// writes at 1. A gigabyte 0 -> 1 takes 1 s (device 1's write), 1 -> 0
// 0.5 s (device 1's read).
const std::vector<ca::DeviceModel> devices{{"fast", 10, 5}, {"slow", 2, 1}};
constexpr std::uint64_t gigabyte = 1'000'000'000;

}  // namespace

TEST_CASE("copy channels: a copy takes its bytes over the slower of the source's read and the target's write") {
  const ca::CopyChannels c(devices, 1);
  CHECK(c.gbps(0, 1) == doctest::Approx(1));
  CHECK(c.gbps(1, 0) == doctest::Approx(2));
  CHECK(c.gbps(0, 0) == doctest::Approx(5));
  CHECK(c.seconds(0, 1, gigabyte) == doctest::Approx(1.0));
  CHECK(c.seconds(1, 0, gigabyte) == doctest::Approx(0.5));
  CHECK(c.seconds(0, 1, 0) == 0.0);
}

TEST_CASE("copy channels: one lane makes one copy at a time, whatever its channel") {
  ca::CopyChannels c(devices, 1);
  const ca::CopySpan out = c.run_on_mover(0, 1, c.seconds(0, 1, gigabyte), 0);
  const ca::CopySpan in = c.run_on_mover(1, 0, c.seconds(1, 0, gigabyte), 0);
  CHECK(out.start == 0.0);
  CHECK(out.end == doctest::Approx(1.0));
  CHECK(in.start == doctest::Approx(1.0));  // behind the copy out on the one lane
  CHECK(in.end == doctest::Approx(1.5));
  CHECK(c.idle_at() == doctest::Approx(1.5));
}

TEST_CASE("copy channels: two lanes carry copies of two channels side by side, one at a time per channel") {
  ca::CopyChannels c(devices, 2);
  const ca::CopySpan out = c.run_on_mover(0, 1, 1.0, 0);
  const ca::CopySpan in = c.run_on_mover(1, 0, 0.5, 0);
  CHECK(in.start == 0.0);  // the other lane, the other channel
  CHECK(in.end == doctest::Approx(0.5));
  // A second copy out waits for its channel (free at 1) on the lane that
  // frees first (0.5).
  const ca::CopySpan second = c.run_on_mover(0, 1, 1.0, 0);
  CHECK(second.start == doctest::Approx(out.end));
  CHECK(second.end == doctest::Approx(2.0));
  // Both lanes are now busy until 1 and 2: a copy in waits for the first.
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: with no lane limit each channel is its own engine, as on a duplex link") {
  ca::CopyChannels c(devices, 0);
  CHECK(c.run_on_mover(0, 1, 1.0, 0).start == 0.0);
  CHECK(c.run_on_mover(1, 0, 0.5, 0).start == 0.0);
  const ca::CopySpan again = c.run_on_mover(0, 1, 1.0, 0.25);
  CHECK(again.start == doctest::Approx(1.0));  // its channel is busy until 1
  CHECK(again.end == doctest::Approx(2.0));
}

TEST_CASE("copy channels: a synchronous copy shares its channel with the mover but takes no lane") {
  ca::CopyChannels c(devices, 1);
  (void)c.run_on_mover(0, 1, 1.0, 0);
  const ca::CopySpan other = c.run_on_caller(1, 0, 0.5, 0);
  CHECK(other.start == 0.0);  // another channel: the busy lane does not hold it
  const ca::CopySpan same = c.run_on_caller(0, 1, 0.25, 0.5);
  CHECK(same.start == doctest::Approx(1.0));  // its channel carries the mover's copy until 1
  CHECK(same.end == doctest::Approx(1.25));
  // The lane is free at 1: the synchronous copy did not take it.
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: the backlog an iteration leaves is what the next one finds, from its start") {
  ca::CopyChannels c(devices, 1);
  (void)c.run_on_mover(0, 1, 1.0, 0.5);  // busy from 0.5 to 1.5
  c.carry_over(1.0);                     // the iteration ended at 1
  CHECK(c.mover_start(1, 0, 0) == doctest::Approx(0.5));
  CHECK(c.channel_free(0, 1) == doctest::Approx(0.5));
  c.carry_over(10);  // long done: nothing is carried, nothing goes negative
  CHECK(c.idle_at() == 0.0);
  CHECK(c.mover_start(0, 1, 0) == 0.0);
}

TEST_CASE("copy channels: two tiers by their copy bandwidths") {
  const ca::CopyChannels c = ca::CopyChannels::two_tiers(4, 8, 1);
  CHECK(c.devices() == 2);
  CHECK(c.gbps(ca::CopyChannels::fast, ca::CopyChannels::slow) == 4.0);
  CHECK(c.gbps(ca::CopyChannels::slow, ca::CopyChannels::fast) == 8.0);
  CHECK(c.seconds(ca::CopyChannels::fast, ca::CopyChannels::slow, 4 * gigabyte) == doctest::Approx(1.0));
}

TEST_CASE("copy channels: the planners' costs give the channels the replay's timeline charges") {
  // AutoTM's costs from the tiers, as AutotmPolicy makes them.
  const ca::plan::Program program({{gigabyte, true}}, {{"k", {{0, gigabyte, ca::Access::write}}}},
                                  {{ca::plan::StepKind::kernel, 0}});
  const ca::plan::MemoryBound model;
  const ca::emulation::Bandwidth dram{10, 5}, pmm{2, 1};
  const ca::plan::AutotmCosts costs = ca::plan::AutotmCosts::from_model(program, model, dram, pmm);
  const ca::CopyChannels planned = costs.channels(1);
  const ca::CopyChannels replayed(devices, 1);
  for (const auto& [src, dst] : {std::pair<ca::DeviceId, ca::DeviceId>{0, 1}, {1, 0}}) {
    CHECK(planned.gbps(src, dst) == replayed.gbps(src, dst));
    CHECK(planned.seconds(src, dst, 123'456'789) == replayed.seconds(src, dst, 123'456'789));
  }
  // The replay's timeline charges a copy the channels' time.
  ca::CopyTimeline timeline(devices);
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
