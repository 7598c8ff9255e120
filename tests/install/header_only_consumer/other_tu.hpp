// What other_tu.cpp, the second translation unit, offers to main.cpp.
#pragma once

#include <cachedarrays/cachedarrays.hpp>

#include <cstdio>
#include <string>

// Writes 0, 1, 2, ... into `array` through a scoped write made here.
void write_counting(cachedarrays::CachedArray<int>& array);

// Describes the DAX heap of a runtime created and destroyed in this
// translation unit, on a default file named by the library (keep_file),
// removed after.
std::string default_dax_heap_of_other_tu();

// A DAX heap made by `make_runtime`'s runtime, named by the library (keep_file:
// a fresh file in a directory is otherwise unnamed) and removed once the
// runtime is gone, so that the next heap may take the same name; returns
// the runtime's description of it.
template <typename MakeRuntime>
std::string described_and_removed(MakeRuntime make_runtime) {
  std::string described;
  {
    const cachedarrays::Runtime rt = make_runtime();
    described = rt.manager().describe(1);
  }
  const std::size_t from = described.find("): ") + 3;
  std::remove(described.substr(from, described.find(", ", from) - from).c_str());
  return described;
}
