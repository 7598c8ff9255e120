// The replay's overlap model (plan/schedule/copy_timeline.hpp) on hand-made events:
// an asynchronous copy runs beside the kernels that do not need it, a
// kernel waits for the copies of its own arguments, a synchronous copy and a
// defrag move are exposed on the compute timeline, copies of one device
// pair share their channel, one mover thread makes one copy at a time, a
// source region stays taken until its copy lands, and a background copy
// waits behind the copies issued before a mover thread takes it.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"
#include "cachedarrays/sim/replay.hpp"

namespace ca = cachedarrays;

namespace {

// Two devices: 10 GB/s both ways (fast) and 1 GB/s both ways (slow), so a
// copy of 1e6 bytes between them takes 1 ms.
const std::vector<ca::DeviceModel> timeline_models{{"fast", 10, 10}, {"slow", 1, 1}};

ca::TraceEvent copy(std::uint64_t object, ca::DeviceId from, ca::DeviceId to, std::uint64_t bytes, bool async) {
  ca::TraceEvent e;
  e.kind = ca::TraceKind::copy;
  e.object = object;
  e.device = from;
  e.device2 = to;
  e.bytes = bytes;
  e.detail = async ? 1 : 0;
  return e;
}

}  // namespace

TEST_CASE("copy timeline: an asynchronous copy hides behind kernels that do not use its object") {
  ca::plan::CopyTimeline t(timeline_models);
  t.copy(copy(7, 1, 0, 1'000'000, /*async=*/true));  // 1 ms on the slow->fast channel
  const std::vector<std::uint64_t> other{3};
  t.kernel(other, 2e-3);
  CHECK(t.exposed_copy_seconds() == 0.0);
  CHECK(t.copy_seconds() == doctest::Approx(1e-3));
  CHECK(t.seconds() == doctest::Approx(2e-3));
  // Its own kernel, later, finds it landed.
  const std::vector<std::uint64_t> mine{7};
  t.kernel(mine, 1e-3);
  CHECK(t.exposed_copy_seconds() == 0.0);
  CHECK(t.seconds() == doctest::Approx(3e-3));
}

TEST_CASE("copy timeline: a kernel waits for the copy of its own argument") {
  ca::plan::CopyTimeline t(timeline_models);
  t.copy(copy(7, 1, 0, 1'000'000, /*async=*/true));
  const std::vector<std::uint64_t> mine{7};
  t.kernel(mine, 0.5e-3);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  CHECK(t.seconds() == doctest::Approx(1.5e-3));
}

TEST_CASE("copy timeline: copies of one device pair queue on its channel; other pairs run beside") {
  ca::plan::CopyTimeline t(timeline_models, {}, /*mover_threads=*/3);  // a thread for each copy
  t.copy(copy(1, 1, 0, 1'000'000, true));
  t.copy(copy(2, 1, 0, 1'000'000, true));  // behind the first: lands at 2 ms
  t.copy(copy(3, 0, 1, 1'000'000, true));  // the other direction: lands at 1 ms
  const std::vector<std::uint64_t> third{3};
  t.kernel(third, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  const std::vector<std::uint64_t> second{2};
  t.kernel(second, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(2e-3));
}

TEST_CASE("copy timeline: synchronous copies and defrag moves are exposed on the compute timeline") {
  ca::plan::CopyTimeline t(timeline_models);
  t.copy(copy(1, 0, 1, 1'000'000, /*async=*/false));  // 1 ms
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  ca::TraceEvent slide;
  slide.kind = ca::TraceKind::defrag_move;
  slide.device = 0;  // within the fast heap: 10 GB/s, 0.1 ms
  slide.bytes = 1'000'000;
  slide.object = 2;
  t.copy(slide);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1.1e-3));
  CHECK(t.copy_seconds() == doctest::Approx(1.1e-3));
  CHECK(t.seconds() == doctest::Approx(1.1e-3));
}

TEST_CASE("copy timeline: one mover thread makes its copies one at a time, in the order issued") {
  ca::plan::CopyTimeline t(timeline_models);  // the timeline's default: one thread
  t.copy(copy(1, 0, 1, 1'000'000, true));     // a write-back: 0 to 1 ms
  t.copy(copy(2, 1, 0, 1'000'000, true));     // a copy in behind it on the same thread: 1 to 2 ms
  const std::vector<std::uint64_t> second{2};
  t.kernel(second, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(2e-3));
  CHECK(t.seconds() == doctest::Approx(2e-3));
}

namespace {

ca::TraceEvent room_event(ca::TraceKind kind, std::uint64_t object, ca::DeviceId device, std::uint64_t bytes) {
  ca::TraceEvent e;
  e.kind = kind;
  e.object = object;
  e.device = device;
  e.bytes = bytes;
  return e;
}

// A fast device of 2e6 bytes with `fast_used` in use, and a roomy slow one.
std::vector<ca::DeviceUsage> two_devices(std::uint64_t fast_used) {
  std::vector<ca::DeviceUsage> room(2);
  room[0].capacity = 2'000'000;
  room[0].bytes_used = fast_used;
  room[1].capacity = 100'000'000;
  return room;
}

}  // namespace

TEST_CASE("copy timeline: a creation waits on the compute timeline while a landing write-back holds its room") {
  ca::plan::CopyTimeline t(timeline_models, two_devices(2'000'000));
  t.copy(copy(1, 0, 1, 1'000'000, true));  // lands at 1 ms
  t.free(room_event(ca::TraceKind::free, 1, 0, 1'000'000));
  // A new object of 1e6 bytes: the device is full until the write-back lands.
  t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
  const std::vector<std::uint64_t> user{5};
  t.kernel(user, 0.5e-3);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  CHECK(t.seconds() == doctest::Approx(1.5e-3));
}

TEST_CASE("copy timeline: a copy in waits for the room a landing write-back holds, the kernels do not") {
  ca::plan::CopyTimeline t(timeline_models, two_devices(2'000'000), /*mover_threads=*/2);
  t.copy(copy(1, 0, 1, 1'000'000, true));  // lands at 1 ms
  t.free(room_event(ca::TraceKind::free, 1, 0, 1'000'000));
  t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
  t.copy(copy(2, 1, 0, 1'000'000, true));  // its own thread, but no room before 1 ms: lands at 2 ms
  const std::vector<std::uint64_t> other{5};
  t.kernel(other, 0.5e-3);
  CHECK(t.exposed_copy_seconds() == 0.0);
  const std::vector<std::uint64_t> second{2};
  t.kernel(second, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1.5e-3));  // from 0.5 ms to 2 ms
  CHECK(t.seconds() == doctest::Approx(2e-3));
}

TEST_CASE("copy timeline: room that is free, or a source whose copy has landed, holds nothing up") {
  SUBCASE("room to spare") {
    ca::plan::CopyTimeline t(timeline_models, two_devices(1'000'000));
    t.copy(copy(1, 0, 1, 1'000'000, true));
    t.free(room_event(ca::TraceKind::free, 1, 0, 1'000'000));
    t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));  // 1e6 of 2e6 in use after
    const std::vector<std::uint64_t> user{5};
    t.kernel(user, 0.5e-3);
    CHECK(t.exposed_copy_seconds() == 0.0);
  }
  SUBCASE("landed") {
    ca::plan::CopyTimeline t(timeline_models, two_devices(2'000'000));
    t.copy(copy(1, 0, 1, 1'000'000, true));  // lands at 1 ms
    const std::vector<std::uint64_t> other{5};
    t.kernel(other, 1e-3);
    t.free(room_event(ca::TraceKind::free, 1, 0, 1'000'000));
    t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
    t.kernel(other, 0.5e-3);
    CHECK(t.exposed_copy_seconds() == 0.0);
  }
  SUBCASE("another object's region") {
    ca::plan::CopyTimeline t(timeline_models, two_devices(2'000'000));
    t.copy(copy(1, 0, 1, 1'000'000, true));
    t.free(room_event(ca::TraceKind::free, 3, 0, 1'000'000));  // not the one being written back
    t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
    const std::vector<std::uint64_t> other{5};
    t.kernel(other, 0.5e-3);
    CHECK(t.exposed_copy_seconds() == 0.0);
  }
  SUBCASE("no room given: no hold") {
    ca::plan::CopyTimeline t(timeline_models);
    t.copy(copy(1, 0, 1, 1'000'000, true));
    t.free(room_event(ca::TraceKind::free, 1, 0, 1'000'000));
    t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
    const std::vector<std::uint64_t> other{5};
    t.kernel(other, 0.5e-3);
    CHECK(t.exposed_copy_seconds() == 0.0);
  }
}

namespace {

// A write-back made ahead (CopyPriority::background).
ca::TraceEvent background_copy(std::uint64_t object, ca::DeviceId from, ca::DeviceId to, std::uint64_t bytes) {
  ca::TraceEvent e = copy(object, from, to, bytes, true);
  e.detail = ca::trace_copy_background;
  return e;
}

}  // namespace

TEST_CASE("copy timeline: a copy in issued while a background write-back waits goes first, as on the mover") {
  ca::plan::CopyTimeline t(timeline_models);    // one mover thread
  t.copy(copy(1, 1, 0, 1'000'000, true));       // a copy in: 0 to 1 ms
  t.copy(background_copy(2, 0, 1, 1'000'000));  // queued behind it
  const std::vector<std::uint64_t> other{5};
  t.kernel(other, 0.5e-3);
  t.copy(copy(3, 1, 0, 1'000'000, true));  // issued at 0.5 ms, before the thread is free: 1 to 2 ms
  const std::vector<std::uint64_t> third{3};
  t.kernel(third, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1.5e-3));  // 0.5 to 2 ms, not to 3 ms
  const std::vector<std::uint64_t> written_back{2};
  t.kernel(written_back, 0);  // the write-back: 2 to 3 ms
  CHECK(t.exposed_copy_seconds() == doctest::Approx(2.5e-3));
  CHECK(t.seconds() == doctest::Approx(3e-3));
}

TEST_CASE("copy timeline: a background write-back the mover reaches before the next copy is issued runs first") {
  ca::plan::CopyTimeline t(timeline_models);
  t.copy(copy(1, 1, 0, 1'000'000, true));       // 0 to 1 ms
  t.copy(background_copy(2, 0, 1, 1'000'000));  // the thread is free at 1 ms: 1 to 2 ms
  const std::vector<std::uint64_t> other{5};
  t.kernel(other, 1.5e-3);
  t.copy(copy(3, 1, 0, 1'000'000, true));  // issued at 1.5 ms, once the write-back has started: 2 to 3 ms
  const std::vector<std::uint64_t> third{3};
  t.kernel(third, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1.5e-3));
  CHECK(t.seconds() == doctest::Approx(3e-3));
}

TEST_CASE("copy timeline: the room a queued background write-back's source holds frees when it lands") {
  ca::plan::CopyTimeline t(timeline_models, two_devices(2'000'000));
  t.copy(copy(1, 1, 0, 1'000'000, true));                    // a copy in: 0 to 1 ms
  t.copy(background_copy(2, 0, 1, 1'000'000));               // queued
  t.free(room_event(ca::TraceKind::free, 2, 0, 1'000'000));  // its source, freed by the policy at once
  const std::vector<std::uint64_t> other{5};
  t.kernel(other, 0.5e-3);
  t.copy(copy(3, 1, 0, 1'000'000, true));  // goes first: 1 to 2 ms; the write-back 2 to 3 ms
  // A creation of 1e6 bytes on the full device waits for the write-back's source.
  t.allocate(room_event(ca::TraceKind::allocate, 0, 0, 1'000'000));
  t.kernel(other, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(2.5e-3));  // 0.5 to 3 ms
  CHECK(t.seconds() == doctest::Approx(3e-3));
}

TEST_CASE("copy timeline: background write-backs still queued at the end count in the iteration's end") {
  ca::plan::CopyTimeline t(timeline_models);
  t.copy(background_copy(1, 0, 1, 1'000'000));
  t.copy(background_copy(2, 0, 1, 1'000'000));
  CHECK(t.now() == 0.0);
  CHECK(t.seconds() == doctest::Approx(2e-3));
  CHECK(t.exposed_copy_seconds() == 0.0);
  // Asking does not start them: a copy in issued now still goes first.
  t.copy(copy(3, 1, 0, 1'000'000, true));
  const std::vector<std::uint64_t> third{3};
  t.kernel(third, 0);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  CHECK(t.seconds() == doctest::Approx(3e-3));
}

// The planners' side of the timeline: the same channels, lanes and waits
// through copies of known bytes and kernels of known seconds.
TEST_CASE("copy timeline: a planner's copies and kernels run as the trace events of the same copies do") {
  const std::vector<std::uint64_t> mine{7};
  const std::vector<std::uint64_t> other{3};
  ca::plan::CopyTimeline events(timeline_models);
  events.copy(copy(7, 1, 0, 1'000'000, true));
  events.kernel(other, 0.5e-3);
  events.copy(copy(8, 1, 0, 1'000'000, false));
  events.kernel(mine, 0.2e-3);
  ca::plan::CopyTimeline planned(ca::plan::CopyChannels(timeline_models, 1), /*objects=*/10);
  const ca::plan::CopySpan in = planned.copy_async(1, 0, 1'000'000, 7);
  CHECK(in.start == 0.0);
  CHECK(in.end == doctest::Approx(1e-3));
  CHECK(planned.run_kernel(other, 0.5e-3) == 0.0);
  // The synchronous copy shares the slow->fast channel: it starts at 1 ms.
  const ca::plan::CopySpan sync = planned.copy_sync(1, 0, 1'000'000, 8);
  CHECK(sync.start == doctest::Approx(1e-3));
  CHECK(planned.run_kernel(mine, 0.2e-3) == doctest::Approx(2e-3));
  CHECK(planned.seconds() == doctest::Approx(events.seconds()));
  CHECK(planned.exposed_copy_seconds() == doctest::Approx(events.exposed_copy_seconds()));
  CHECK(planned.copy_seconds() == doctest::Approx(events.copy_seconds()));
}

TEST_CASE("copy timeline: a planner's copy waits for its earliest start, a lane and its channel") {
  ca::plan::CopyTimeline t(ca::plan::CopyChannels(timeline_models, 1), 4);
  CHECK(t.copy_async(0, 1, 1'000'000, 0, /*earliest=*/2e-3).start == doctest::Approx(2e-3));
  // One lane: the next copy, on the other channel, waits for it.
  CHECK(t.mover_start(1, 0) == doctest::Approx(3e-3));
  CHECK(t.copy_async(1, 0, 1'000'000, 1).end == doctest::Approx(4e-3));
  CHECK(t.landed(1) == doctest::Approx(4e-3));
  CHECK(t.landed(2) == 0.0);
  CHECK(t.wait_until(2.5e-3) == doctest::Approx(2.5e-3));
  CHECK(t.wait_until(1e-3) == doctest::Approx(2.5e-3));  // a wait for the past waits for nothing
  CHECK(t.exposed_copy_seconds() == doctest::Approx(2.5e-3));
  // The next iteration finds the copies 2.5 ms later still running.
  t.carry_over(2.5e-3);
  CHECK(t.now() == 0.0);
  CHECK(t.landed(1) == doctest::Approx(1.5e-3));
  CHECK(t.mover_start(0, 1) == doctest::Approx(1.5e-3));
  // Reset: idle again, as made.
  t.reset();
  CHECK(t.landed(1) == 0.0);
  CHECK(t.mover_start(1, 0) == 0.0);
  CHECK(t.seconds() == 0.0);
}

TEST_CASE("copy timeline: without a lane limit each channel is its own engine") {
  ca::plan::CopyTimeline t(ca::plan::CopyChannels(timeline_models, 0));
  CHECK(t.copy_async(0, 1, 1'000'000, 100).start == 0.0);  // an id past the dense ones: kept all the same
  CHECK(t.copy_async(1, 0, 1'000'000, 101).start == 0.0);
  CHECK(t.copy_async(1, 0, 1'000'000, 102).start == doctest::Approx(1e-3));
  const std::vector<std::uint64_t> both{100, 102};
  CHECK(t.run_kernel(both, 0) == doctest::Approx(2e-3));
}
