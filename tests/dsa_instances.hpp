// Where the offset planners' tests find MiniMalloc's DSA instances: in the
// repository (data/dsa/README.md), at the path tests/CMakeLists.txt gives
// the test binary.
#pragma once

#include <filesystem>

namespace test {

inline std::filesystem::path dsa_instances_dir() { return CACHEDARRAYS_DSA_DATA_DIR; }

}  // namespace test
