// Reorders between a tensor and a strided view of another one, private to
// the transformer's data-movement ops (heads.cpp, patch_tokens.cpp). A head
// of a QKV projection, or the patch tokens after a class token, is a strided
// window of a larger plain buffer that no Tensor describes: Context::execute
// builds each dnnl::memory from its Tensor's own descriptor, so these ops run
// oneDNN's reorder on descriptors of their own, at pointers offset into the
// buffers, inside one Context::run kernel that holds the hints and pins of
// the whole tensors.
#pragma once

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn::detail {

// An f32 descriptor of `dims` whose elements lie `strides` floats apart,
// outermost first: a view of part of a larger plain buffer.
inline dnnl::memory::desc strided_desc(const Dims& dims, const Dims& strides) {
  return {dims, dnnl::memory::data_type::f32, strides};
}

// The reorder from `from` to `to` (same dims), cached. It is made with
// oneDNN's default attributes, whose scratchpad oneDNN keeps itself, not the
// context's user-mode one: it runs inside a Context::run body, which has no
// scratchpad argument, and an f32 reorder without scales takes no scratch.
inline const dnnl::reorder& view_reorder(Context& ctx, const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  const std::string key = "view_reorder:" + key_of(from) + ">" + key_of(to);
  return *ctx.cached<dnnl::reorder::primitive_desc, dnnl::reorder>(
                 key, [&] { return dnnl::reorder::primitive_desc(ctx.engine(), from, ctx.engine(), to); })
              .second;
}

// Runs `prim` (view_reorder(ctx, from, to)) from the data at `src` to `dst`;
// for use inside a Context::run body, which hands over the pointers.
inline void run_view_reorder(Context& ctx, const dnnl::reorder& prim, const dnnl::memory::desc& from, float* src,
                             const dnnl::memory::desc& to, float* dst) {
  dnnl::memory src_memory(from, ctx.engine(), src);
  dnnl::memory dst_memory(to, ctx.engine(), dst);
  prim.execute(ctx.stream(), {{DNNL_ARG_FROM, src_memory}, {DNNL_ARG_TO, dst_memory}});
  ctx.stream().wait();
}

}  // namespace cachedarrays::nn::detail
