// A tensor of the CNN trainer: a CachedArray<float> plus its logical shape
// and the oneDNN memory descriptor of its layout (plain nchw, or a blocked
// layout such as nChw16c chosen by a primitive with format_tag::any).
//
// Tensors are shared handles: copies share one array, and the array is
// retired when the last handle goes (the trainer drops its handles right
// after a tensor's last use, so this is where the paper's retire hints come
// from). In a shape-only dry run a tensor has a descriptor but no array.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cachedarrays/runtime/cached_array.hpp"

namespace cachedarrays::nn {

using Dims = std::vector<std::int64_t>;

class Tensor {
 public:
  Tensor() = default;
  // A tensor with storage from `runtime` (nullptr: shape only, no storage).
  Tensor(Runtime* runtime, const dnnl::memory::desc& desc);

  [[nodiscard]] explicit operator bool() const noexcept { return state_ != nullptr; }
  [[nodiscard]] const dnnl::memory::desc& desc() const { return state_->desc; }
  [[nodiscard]] Dims dims() const { return state_->desc.dims(); }
  [[nodiscard]] std::int64_t elements() const;  // product of the logical dims
  [[nodiscard]] std::uint64_t bytes() const { return state_->desc.get_size(); }
  // Storage; null for a shape-only tensor.
  [[nodiscard]] CachedArray<float>* array() const noexcept { return state_->array.get(); }
  // Unique per tensor for the life of the process (also for shape-only ones).
  [[nodiscard]] std::uint64_t id() const noexcept { return state_->id; }
  [[nodiscard]] long use_count() const noexcept { return state_.use_count(); }
  void reset() noexcept { state_.reset(); }

 private:
  struct State {
    dnnl::memory::desc desc;
    std::unique_ptr<CachedArray<float>> array;
    std::uint64_t id = 0;
  };
  std::shared_ptr<State> state_;
};

// The number of elements of a tensor of these dims (their product).
[[nodiscard]] std::int64_t element_count(const Dims& dims);

// "[2, 3, 32, 32]": shapes in error messages.
[[nodiscard]] std::string to_string(const Dims& dims);

// Plain row-major descriptors (nchw for 4-d, nc for 2-d, a for 1-d, ...).
[[nodiscard]] dnnl::memory::desc plain_desc(const Dims& dims);
[[nodiscard]] dnnl::memory::format_tag plain_tag(std::size_t rank);

}  // namespace cachedarrays::nn
