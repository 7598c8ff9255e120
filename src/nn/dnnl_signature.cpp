#include "cachedarrays/nn/dnnl_signature.hpp"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <numeric>
#include <vector>

#include "cachedarrays/plan/program/kernel_signature.hpp"

namespace cachedarrays::nn {

namespace {

std::string role_of(int dnnl_arg) {
  if (dnnl_arg >= DNNL_ARG_MULTIPLE_SRC && dnnl_arg < DNNL_ARG_MULTIPLE_DST) {
    return "src" + std::to_string(dnnl_arg - DNNL_ARG_MULTIPLE_SRC);
  }
  switch (dnnl_arg) {
    case DNNL_ARG_SRC: return "src";
    case DNNL_ARG_SRC_1: return "src1";
    case DNNL_ARG_DST: return "dst";
    case DNNL_ARG_DST_1: return "dst1";
    case DNNL_ARG_WEIGHTS: return "weights";
    case DNNL_ARG_BIAS: return "bias";
    case DNNL_ARG_MEAN: return "mean";
    case DNNL_ARG_VARIANCE: return "variance";
    case DNNL_ARG_SCALE: return "scale";
    case DNNL_ARG_SHIFT: return "shift";
    case DNNL_ARG_WORKSPACE: return "workspace";
    case DNNL_ARG_DIFF_SRC: return "diff_src";
    case DNNL_ARG_DIFF_DST: return "diff_dst";
    case DNNL_ARG_DIFF_WEIGHTS: return "diff_weights";
    case DNNL_ARG_DIFF_BIAS: return "diff_bias";
    case DNNL_ARG_DIFF_SCALE: return "diff_scale";
    case DNNL_ARG_DIFF_SHIFT: return "diff_shift";
    default: return "arg" + std::to_string(dnnl_arg);
  }
}

std::uint64_t elements(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::uint64_t{1},
                         [](std::uint64_t n, std::int64_t d) { return n * static_cast<std::uint64_t>(d); });
}

// The first argument with one of these roles, or null.
const KernelArg* find_kernel_arg(std::span<const KernelArg> args, std::initializer_list<int> roles) {
  for (const KernelArg& a : args) {
    if (std::find(roles.begin(), roles.end(), a.dnnl_arg) != roles.end()) return &a;
  }
  return nullptr;
}

// The tensor of the first argument with one of these roles, or null.
const Tensor* find_arg(std::span<const KernelArg> args, std::initializer_list<int> roles) {
  const KernelArg* a = find_kernel_arg(args, roles);
  return a == nullptr ? nullptr : a->tensor;
}

// The dims the primitive sees an argument with: its view's when it has one
// (a transposed matmul operand), else the tensor's.
Dims seen_dims(const KernelArg& a) { return a.view != nullptr ? Dims(a.view->dims()) : a.tensor->dims(); }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// FLOPs per element of the largest argument, for the element-wise kinds.
double flops_per_element(std::string_view kind) {
  static const std::map<std::string_view, double, std::less<>> table{
      {"relu", 1},
      {"relu_backward", 1},
      {"add", 1},
      {"accumulate", 1},
      {"max_pool", 1},
      {"max_pool_backward", 1},
      {"avg_pool", 1},
      {"avg_pool_backward", 1},
      {"global_avg_pool", 1},
      {"global_avg_pool_backward", 1},
      // mean, variance, then (x - mean) * scale / sigma + shift
      {"batch_norm", 5},
      {"batch_norm_backward", 8},
      // m = momentum * m + (g + decay * w); w -= lr * m
      {"sgd", 6},
      // w *= decay; m += (1 - b1)(g - m); v = b2 v + (1 - b2) g^2;
      // w -= step * m / (sqrt(v) / c2 + eps)
      {"adamw", 14},
      // max, exp(z - max), sum, divide, the log of the target's
      {"softmax_cross_entropy", 5},
      {"softmax_cross_entropy_backward", 2},
      // mean, variance, then (x - mean) * scale / sigma + shift, as batch norm
      {"layer_norm", 5},
      {"layer_norm_backward", 8},
      // x * (1 + erf(x / sqrt 2)) / 2; backward adds the density term x phi(x)
      {"gelu", 4},
      {"gelu_backward", 7},
      // max, exp(z - max), sum, divide; backward: y * (dy - sum(dy * y))
      {"softmax", 4},
      {"softmax_backward", 4}};
  const auto it = table.find(kind);
  return it == table.end() ? 0.0 : it->second;
}

}  // namespace

std::string layout_of(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.format_kind != dnnl_blocked) return "any";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  // Outer dims from the largest stride to the smallest, upper case when
  // blocked, then the inner blocks innermost last: oneDNN's own notation.
  std::vector<int> order(static_cast<std::size_t>(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::vector<bool> blocked(order.size(), false);
  for (int i = 0; i < b.inner_nblks; ++i) blocked[static_cast<std::size_t>(b.inner_idxs[i])] = true;
  std::string s;
  for (int i : order) s += static_cast<char>((blocked[static_cast<std::size_t>(i)] ? 'A' : 'a') + i);
  for (int i = 0; i < b.inner_nblks; ++i) {
    s += std::to_string(b.inner_blks[i]);
    s += static_cast<char>('a' + b.inner_idxs[i]);
  }
  return s;
}

std::uint64_t kernel_flops(std::string_view kind, std::span<const KernelArg> args) {
  if (starts_with(kind, "conv") || starts_with(kind, "linear")) {
    const Tensor* weights = find_arg(args, {DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_WEIGHTS});
    const Tensor* dst = find_arg(args, {DNNL_ARG_DST, DNNL_ARG_DIFF_DST});
    if (weights == nullptr || dst == nullptr) return 0;
    const Dims y = dst->dims();
    // A convolution's channels are axis 1 of NCHW; a linear layer's are the
    // last axis, which is axis 1 of [N, out] and axis 2 of a token-wise
    // layer's [N, T, out].
    const std::int64_t channels = starts_with(kind, "linear") ? y.back() : y.at(1);
    const std::uint64_t per_channel = elements(y) / static_cast<std::uint64_t>(std::max<std::int64_t>(1, channels));
    return 2 * per_channel * elements(weights->dims());
  }
  if (starts_with(kind, "matmul")) {
    // Each element of dst [B..., M, N] is a dot product of length K, the
    // last axis of src [B..., M, K] as the primitive sees it.
    const KernelArg* src = find_kernel_arg(args, {DNNL_ARG_SRC});
    const Tensor* dst = find_arg(args, {DNNL_ARG_DST});
    if (src == nullptr || dst == nullptr) return 0;
    return 2 * elements(dst->dims()) * static_cast<std::uint64_t>(seen_dims(*src).back());
  }
  const double per_element = flops_per_element(kind);
  if (per_element == 0) return 0;
  std::uint64_t largest = 0;
  for (const KernelArg& a : args) largest = std::max(largest, elements(a.tensor->dims()));
  return static_cast<std::uint64_t>(per_element * static_cast<double>(largest));
}

std::string kernel_signature(std::string_view name, std::span<const KernelArg> args) {
  std::vector<plan::SignatureArg> described;
  described.reserve(args.size());
  for (const KernelArg& a : args) {
    described.push_back({role_of(a.dnnl_arg), a.tensor->dims(), layout_of(a.tensor->desc())});
  }
  return plan::make_signature(name, described, kernel_flops(plan::kernel_kind(name), args));
}

}  // namespace cachedarrays::nn
