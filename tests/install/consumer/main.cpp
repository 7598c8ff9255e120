// A program built only against the installed package: it must find the
// headers, link the library, and move data between two tiers.
#include <cachedarrays/cachedarrays.hpp>

#include <cstdio>

namespace ca = cachedarrays;

int main() {
  ca::Runtime rt{{ca::dram(1 << 20), ca::dax_file({}, 4 << 20)}};
  auto big = rt.array<int>(200'000);    // 800 KB: fills most of the fast tier
  auto spill = rt.array<int>(100'000);  // does not fit: lands on the DAX heap
  {
    auto w = spill.write();
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int>(i);
  }
  auto r = spill.read();
  const bool ok = r[99'999] == 99'999 && rt.manager().device(*rt.manager().getprimary(spill.object())) == 1;
  std::printf("consumer: cachedarrays %s, %s\n", ca::version_string, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
