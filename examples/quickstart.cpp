// Quickstart: two tiers, arrays placed by the default policy (first touch:
// fast until full, then slow), data reached through scoped accesses and a
// kernel, and one object moved between tiers with the paper's Listing 1 and
// Listing 2 (what a policy does on archive / will_read). Prints the stats.
#include <cachedarrays/cachedarrays.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

namespace ca = cachedarrays;

int main() {
  // A 64 MiB fast tier (DRAM) and a 256 MiB slow tier (a DAX heap: here an
  // ordinary file under /dev/shm, since this machine has no pmem).
  ca::Runtime rt{{ca::dram(64 << 20, "fast"), ca::dax_file({}, 256 << 20, "slow")}};
  for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("{}\n", rt.manager().describe(d));

  const std::size_t n = 6 << 20;  // 24 MiB of floats per array
  ca::CachedArray<float> x = rt.array<float>(n);
  ca::CachedArray<float> y = rt.array<float>(n);
  ca::CachedArray<float> z = rt.array<float>(n);  // fast tier is full: lands in slow

  {
    auto w = x.write();  // will_write + pin; the primary is marked dirty
    std::iota(w.begin(), w.end(), 0.0f);
  }
  rt.kernel(ca::reads(x), ca::writes(y, z), [](std::span<const float> a, std::span<float> b, std::span<float> c) {
    std::transform(a.begin(), a.end(), b.begin(), [](float v) { return 2 * v; });
    std::transform(a.begin(), a.end(), c.begin(), [](float v) { return v + 1; });
  });

  const auto where = [&](const ca::CachedArray<float>& a) {
    const auto& dm = rt.manager();
    return dm.spec(dm.device(*dm.getprimary(a.object()))).display_name();
  };
  fmt::print("x on {}, y on {}, z on {}\n", where(x), where(y), where(z));

  {
    // What a policy does: evict y to the slow tier (Listing 1), then bring z
    // into the room it left (Listing 2). Policies run under the runtime lock.
    auto guard = rt.lock();
    ca::DataManager& dm = rt.manager();
    ca::policy::evict(dm, y.object(), /*fast=*/0, /*slow=*/1);
    ca::policy::prefetch(dm, z.object(), /*fast=*/0, /*slow=*/1);
    dm.check_invariants(/*verify_contents=*/true);
  }
  fmt::print("after evict(y), prefetch(z): y on {}, z on {}\n", where(y), where(z));

  const auto r = z.read();
  const bool ok = r[n - 1] == static_cast<float>(n - 1) + 1 && y.read()[10] == 20.0f;
  fmt::print("contents {}\n\n{}\n", ok ? "intact" : "WRONG", rt.stats());
  return ok ? 0 : 1;
}
