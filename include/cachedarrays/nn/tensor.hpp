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

/// A tensor's logical shape, outermost first ({N, C, H, W} for images).
using Dims = std::vector<std::int64_t>;

/// A tensor of the CNN trainer (see the file comment): a shared handle to a
/// CachedArray<float>, its shape and its oneDNN layout. A default-made
/// Tensor is an empty handle (false); its accessors other than operator
/// bool, use_count and reset must not be called.
class Tensor {
 public:
  Tensor() = default;
  /// A tensor of layout `desc` with storage from `runtime` (nullptr: shape
  /// only, no storage), of desc.get_size() bytes.
  Tensor(Runtime* runtime, const dnnl::memory::desc& desc);

  /// Whether the handle holds a tensor (false: default-made or reset).
  [[nodiscard]] explicit operator bool() const noexcept { return state_ != nullptr; }
  /// The oneDNN memory descriptor of its layout (plain or blocked).
  [[nodiscard]] const dnnl::memory::desc& desc() const { return state_->desc; }
  /// Its logical dims, whatever the layout.
  [[nodiscard]] Dims dims() const { return state_->desc.dims(); }
  [[nodiscard]] std::int64_t elements() const;  ///< product of the logical dims
  /// Bytes its layout takes (a blocked layout's padding included).
  [[nodiscard]] std::uint64_t bytes() const { return state_->desc.get_size(); }
  /// Storage; null for a shape-only tensor.
  [[nodiscard]] CachedArray<float>* array() const noexcept { return state_->array.get(); }
  /// Unique per tensor for the life of the process (also for shape-only ones).
  [[nodiscard]] std::uint64_t id() const noexcept { return state_->id; }
  /// The handles sharing this tensor (0 for an empty handle): 1 means this
  /// handle alone holds it, and dropping it retires the array.
  [[nodiscard]] long use_count() const noexcept { return state_.use_count(); }
  /// Drops this handle; the array is retired if it was the last.
  void reset() noexcept { state_.reset(); }

 private:
  struct State {
    dnnl::memory::desc desc;
    std::unique_ptr<CachedArray<float>> array;
    std::uint64_t id = 0;
  };
  std::shared_ptr<State> state_;
};

/// The number of elements of a tensor of these dims (their product; 1 for
/// no dims).
[[nodiscard]] std::int64_t element_count(const Dims& dims);

/// The dims as text, "[2, 3, 32, 32]": shapes in error messages.
[[nodiscard]] std::string to_string(const Dims& dims);

/// The plain row-major f32 descriptor of these dims (nchw for 4-d, nc for
/// 2-d, a for 1-d, ...). Throws invalid_argument for a rank outside 1 to 5.
[[nodiscard]] dnnl::memory::desc plain_desc(const Dims& dims);
/// The plain row-major format tag of a tensor of rank `rank` (a, ab, abc,
/// abcd, abcde). Throws invalid_argument for a rank outside 1 to 5.
[[nodiscard]] dnnl::memory::format_tag plain_tag(std::size_t rank);

}  // namespace cachedarrays::nn
