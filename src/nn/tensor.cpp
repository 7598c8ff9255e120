#include "cachedarrays/nn/tensor.hpp"

#include <atomic>
#include <functional>
#include <numeric>

namespace cachedarrays::nn {

namespace {
std::atomic<std::uint64_t> next_tensor_id{1};
}

Tensor::Tensor(Runtime* runtime, const dnnl::memory::desc& desc) : state_(std::make_shared<State>()) {
  state_->desc = desc;
  state_->id = next_tensor_id.fetch_add(1, std::memory_order_relaxed);
  if (runtime != nullptr) {
    const std::size_t floats = (desc.get_size() + sizeof(float) - 1) / sizeof(float);
    state_->array = std::make_unique<CachedArray<float>>(runtime->array<float>(std::max<std::size_t>(floats, 1)));
  }
}

std::int64_t element_count(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

std::int64_t Tensor::elements() const { return element_count(dims()); }

std::string to_string(const Dims& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
  return s + "]";
}

dnnl::memory::format_tag plain_tag(std::size_t rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default:
      throw invalid_argument("cachedarrays::nn: tensors of rank " + std::to_string(rank) +
                             " are not supported; use rank 1 to 5");
  }
}

dnnl::memory::desc plain_desc(const Dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, plain_tag(dims.size()));
}

}  // namespace cachedarrays::nn
