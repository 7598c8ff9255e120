// What both translation units include: the umbrella header (the whole
// library in header-only mode) and the internals the test reaches into.
#pragma once

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/manager/copy_path.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"

#include <cstdio>
#include <string>

// A DAX heap on a default file named by the library (keep_file: a fresh
// file is otherwise unnamed) and the file removed once the heap is gone, so
// that the next heap may take the same name: its description.
inline std::string kept_dax_memory_described_and_removed() {
  cachedarrays::DeviceSpec spec = cachedarrays::dax_file({}, 1 << 20);
  spec.keep_file = true;
  const std::string described = cachedarrays::detail::make_heap_memory(spec)->description();
  std::remove(described.substr(0, described.find(", ")).c_str());
  return described;
}

// Both made by other_tu.cpp.
std::string default_dax_memory_of_other_tu();
std::string copy_and_report_in_other_tu();
