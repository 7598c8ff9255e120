// The replay's overlap model (sim/copy_timeline.hpp) on hand-made events:
// an asynchronous copy runs beside the kernels that do not need it, a
// kernel waits for the copies of its own arguments, a synchronous copy and a
// defrag move are exposed on the compute timeline, and copies of one device
// pair share their channel.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/sim/copy_timeline.hpp"
#include "cachedarrays/sim/replay.hpp"

namespace ca = cachedarrays;

namespace {

// Two devices: 10 GB/s both ways (fast) and 1 GB/s both ways (slow), so a
// copy of 1e6 bytes between them takes 1 ms.
const std::vector<ca::DeviceModel> models{{"fast", 10, 10}, {"slow", 1, 1}};

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
  ca::CopyTimeline t(models);
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
  ca::CopyTimeline t(models);
  t.copy(copy(7, 1, 0, 1'000'000, /*async=*/true));
  const std::vector<std::uint64_t> mine{7};
  t.kernel(mine, 0.5e-3);
  CHECK(t.exposed_copy_seconds() == doctest::Approx(1e-3));
  CHECK(t.seconds() == doctest::Approx(1.5e-3));
}

TEST_CASE("copy timeline: copies of one device pair queue on its channel; other pairs run beside") {
  ca::CopyTimeline t(models);
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
  ca::CopyTimeline t(models);
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
