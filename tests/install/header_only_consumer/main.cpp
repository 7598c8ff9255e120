// A program built with cachedarrays::header_only from an installed package:
// the library's implementation compiles into it from the installed headers,
// and the target's usage requirements (include directories, the libraries
// the implementation calls) must be enough to link and run it. One
// translation unit: each compiles the whole implementation, and the rules
// that only a second one can break (no function defined twice, state once
// per process) are the same headers' rules, checked inside the build tree by
// header_only.two_translation_units and header_only.inl_rules.
#include <cachedarrays/cachedarrays.hpp>

#include <cstdio>

namespace ca = cachedarrays;

// An array that does not fit in the fast tier: written, spilled to the DAX
// heap, and read back.
bool spilled_array_round_trips() {
  ca::Runtime rt{{ca::dram(1 << 20), ca::dax_file({}, 4 << 20)}};
  auto fill = rt.array<int>(200'000);  // 800 KB of the 1 MiB fast tier
  auto spilled = rt.array<int>(100'000);
  {
    auto w = spilled.write();
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int>(i);
  }
  const bool on_dax = rt.manager().device(*rt.manager().getprimary(spilled.object())) == 1;
  auto r = spilled.read();
  return on_dax && r[0] == 0 && r[99'999] == 99'999;
}

int main() {
  const bool data_ok = spilled_array_round_trips();
  std::printf("header_only_consumer: cachedarrays %s, data %s\n", ca::version_string, data_ok ? "ok" : "WRONG");
  return data_ok ? 0 : 1;
}
