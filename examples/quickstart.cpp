// Quickstart: a fast tier too small for the data, the CachedArrays policy in
// mode CA:LM, and hints that move arrays between the tiers. Prints where
// each array lives and the runtime's stats.
#include <cachedarrays/cachedarrays.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

namespace ca = cachedarrays;

int main() {
  // A 64 MiB fast tier (DRAM) and a 256 MiB slow tier (a DAX heap: here an
  // ordinary file under /dev/shm, since this machine has no pmem).
  ca::Runtime rt{{ca::dram(64 << 20, "fast"), ca::dax_file({}, 256 << 20, "slow")},
                 std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)};
  for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("{}\n", rt.manager().describe(d));

  const std::size_t n = 6 << 20;                  // 24 MiB of floats per array: two fit in fast memory
  ca::CachedArray<float> x = rt.array<float>(n);  // placed by the policy (L: in fast memory)
  {
    auto w = x.write();  // will_write + pin; the primary is marked dirty
    std::iota(w.begin(), w.end(), 0.0f);
  }
  ca::CachedArray<float> y = rt.array<float>(n);
  rt.kernel(ca::reads(x), ca::writes(y), [](std::span<const float> a, std::span<float> b) {
    std::transform(a.begin(), a.end(), b.begin(), [](float v) { return 2 * v; });
  });
  x.archive();  // not needed for a while: first to leave fast memory

  const auto where = [&](const ca::CachedArray<float>& a) {
    auto guard = rt.lock();
    const auto& dm = rt.manager();
    return dm.spec(dm.device(*dm.getprimary(a.object()))).display_name();
  };
  ca::CachedArray<float> z = rt.array<float>(n);  // no room: the archived x is evicted
  fmt::print("after creating z: x on {}, y on {}, z on {}\n", where(x), where(y), where(z));

  rt.kernel(ca::reads(y), ca::writes(x), [](std::span<const float> a, std::span<float> b) {
    std::transform(a.begin(), a.end(), b.begin(), [](float v) { return v + 1; });
  });  // will_write brings x back, evicting the least recently used (z)
  fmt::print("after writing x: x on {}, y on {}, z on {}\n", where(x), where(y), where(z));

  y.retire();  // never needed again: freed at once (M)
  const bool ok = x.read()[n - 1] == 2 * static_cast<float>(n - 1) + 1;
  fmt::print("contents {}\n\n{}\n", ok ? "intact" : "WRONG", rt.stats());
  return ok ? 0 : 1;
}
