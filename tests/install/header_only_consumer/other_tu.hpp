// What other_tu.cpp, the second translation unit, offers to main.cpp.
#pragma once

#include <cachedarrays/cachedarrays.hpp>

#include <string>

// Writes 0, 1, 2, ... into `array` through a scoped write made here.
void write_counting(cachedarrays::CachedArray<int>& array);

// Describes the DAX heap of a runtime created and destroyed in this
// translation unit, on a default file (a fresh one under /dev/shm).
std::string default_dax_heap_of_other_tu();
