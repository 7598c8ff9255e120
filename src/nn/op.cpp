#include "cachedarrays/nn/op.hpp"

namespace cachedarrays::nn {

// Out of line so that Op's vtable is emitted once, in the library.
Op::~Op() = default;

}  // namespace cachedarrays::nn
