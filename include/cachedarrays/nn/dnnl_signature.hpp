// The signature of each kernel the trainer runs (plan/program/kernel_signature.hpp):
// Context::execute and Context::run compute it from the kernel's name and
// arguments and run the kernel under it, so traces, kernel observers and
// profiles all see
//
//   conv s1p1 src=4x64x24x24:aBcd16b weights=64x64x3x3:ABcd16b16a dst=4x64x24x24:aBcd16b flops=169869312
//
// The name an op passes is its kind ("conv", "relu_backward", "reorder")
// followed by whatever else its primitive depends on that the arguments do
// not show (a convolution's stride and padding, a pooling window).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "cachedarrays/nn/context.hpp"

namespace cachedarrays::nn {

/// The signature of a kernel named `name` over `args`: `name` followed by
/// each argument's oneDNN role (src, weights, diff_dst, src1 for the second
/// of several sources, ...), dims and layout, and `flops=` kernel_flops(kind
/// of name, args) when there are any, such as
/// `conv s1p1 src=4x64x24x24:aBcd16b weights=64x64x3x3:ABcd16b16a ... flops=169869312`.
[[nodiscard]] std::string kernel_signature(std::string_view name, std::span<const KernelArg> args);

/// The floating-point operations of a kernel of `kind` over `args`:
///  - convolution and inner product, forward, backward data and backward
///    weights ("conv*", "linear*"): `2 * N*OH*OW * |weights|`, which is
///    `2*N*OC*OH*OW*IC*KH*KW/groups` (`N*OH*OW`: the elements of dst or
///    diff_dst per output channel, axis 1 of a convolution's and the last
///    axis of a linear layer's; an inner product has OH = OW = 1, a
///    token-wise one N*T for [N, T, out]);
///  - matrix products, forward and the two backward ones ("matmul*"):
///    `2 * |dst| * K`, K the last axis of src as the primitive sees it (its
///    view, when it reads a transposed one);
///  - element-wise kinds: a few per element of the largest argument
///    (relu 1, add 1, accumulate 1, pooling 1, batch norm 5 forward and 8
///    backward, layer norm likewise, GELU 4 and 7, softmax 4 and 4, SGD
///    with momentum and weight decay 6, softmax cross-entropy 5 forward
///    and 2 backward);
///  - data movement (reorder, concat, fill, read, write) and unknown kinds: 0.
[[nodiscard]] std::uint64_t kernel_flops(std::string_view kind, std::span<const KernelArg> args);

/// A descriptor's layout in oneDNN's format-tag notation: "abcd" (nchw),
/// "aBcd16b" (nChw16c), "ABcd16b16a" (OIhw16i16o); "any" when it has none.
[[nodiscard]] std::string layout_of(const dnnl::memory::desc& desc);

}  // namespace cachedarrays::nn
