// Header-only mode from two translation units (see CMakeLists.txt): both
// use the converted implementation, and the state it keeps per process
// stays one per process. The counter that names kept default DAX files is
// the witness: with one counter per translation unit, two heaps made one
// after the other from the two units (each file removed before the next)
// would get the same file name. (The linker
// keeps one copy of each inline function, so state per unit would show here
// only where a unit's own copy got inlined; tools/check_inl.py forbids its
// causes outright.)
#include "headers.hpp"

#include <cstdio>

namespace ca = cachedarrays;

int main() {
  const std::string report = copy_and_report_in_other_tu();
  std::printf("%s\n", report.c_str());
  const std::string here = kept_dax_memory_described_and_removed();
  const std::string there = default_dax_memory_of_other_tu();
  std::printf("DAX heap made here:            %s\nDAX heap made in other_tu.cpp: %s\n", here.c_str(), there.c_str());
  const bool copied = report.starts_with("copied");
  const bool distinct = here != there;
  if (!distinct) std::printf("FAILED: both translation units named their DAX file alike\n");
  return copied && distinct ? 0 : 1;
}
