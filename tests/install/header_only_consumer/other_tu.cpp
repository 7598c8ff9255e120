// The second translation unit of the header-only consumer: it compiles the
// whole implementation again, and the linker must keep one copy of it.
#include "other_tu.hpp"

namespace ca = cachedarrays;

void write_counting(ca::CachedArray<int>& array) {
  auto w = array.write();
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int>(i);
}

std::string default_dax_heap_of_other_tu() {
  return described_and_removed([] {
    ca::DeviceSpec slow = ca::dax_file({}, 1 << 20);
    slow.keep_file = true;  // named cachedarrays-<pid>-<n> by the counter under test
    return ca::Runtime{{ca::dram(1 << 20), slow}};
  });
}
