#include "cachedarrays/nn/op.hpp"

namespace cachedarrays::nn {

// Out of line so that Op's vtable is emitted once, in the library.
Op::~Op() = default;

dnnl::memory::desc Op::parameter_desc(Context&, std::span<const Tensor> inputs, std::size_t input) const {
  return plain_desc(inputs[input].dims());
}

}  // namespace cachedarrays::nn
