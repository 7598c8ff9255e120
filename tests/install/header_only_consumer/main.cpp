// A program built with cachedarrays::header_only: the library's
// implementation is compiled into it, from this translation unit and from
// other_tu.cpp. It must link (no function defined twice), move data between
// two tiers, and keep file-scope state once per process: the counter that
// names kept default DAX files must not be one per translation unit.
#include <cachedarrays/cachedarrays.hpp>

#include <cstdio>
#include <string>

#include "other_tu.hpp"

namespace ca = cachedarrays;

namespace {

// An array that does not fit in the fast tier, written by the other
// translation unit and read back here.
bool spilled_array_round_trips() {
  ca::Runtime rt{{ca::dram(1 << 20), ca::dax_file({}, 4 << 20)}};
  auto fill = rt.array<int>(200'000);  // 800 KB of the 1 MiB fast tier
  auto spilled = rt.array<int>(100'000);
  write_counting(spilled);
  const bool on_dax = rt.manager().device(*rt.manager().getprimary(spilled.object())) == 1;
  auto r = spilled.read();
  return on_dax && r[0] == 0 && r[99'999] == 99'999;
}

std::string default_dax_heap_of_this_tu() {
  return described_and_removed([] {
    ca::DeviceSpec slow = ca::dax_file({}, 1 << 20);
    slow.keep_file = true;  // named cachedarrays-<pid>-<n> by the counter under test
    return ca::Runtime{{ca::dram(1 << 20), slow}};
  });
}

}  // namespace

int main() {
  const bool data_ok = spilled_array_round_trips();
  // One after the other, each file removed before the next is made: with a
  // counter per translation unit both would get the same name.
  const std::string here = default_dax_heap_of_this_tu();
  const std::string there = default_dax_heap_of_other_tu();
  const bool distinct = here != there;
  std::printf("header_only_consumer: DAX heaps made by the two translation units:\n  %s\n  %s\n",
              here.c_str(), there.c_str());
  std::printf("header_only_consumer: cachedarrays %s, data %s, file names %s\n", ca::version_string,
              data_ok ? "ok" : "WRONG", distinct ? "distinct" : "THE SAME (state per translation unit)");
  return data_ok && distinct ? 0 : 1;
}
