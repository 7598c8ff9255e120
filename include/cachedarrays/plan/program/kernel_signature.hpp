// A kernel's signature (docs/design.md "What is known ahead"): what identifies a
// kernel for its profile, written as one line, which is also the name a
// Trace records the kernel under — so the replay simulator finds each
// kernel's profile and FLOPs from the trace alone:
//
//   conv s1p1 src=4x64x24x24:aBcd16b weights=64x64x3x3:ABcd16b16a dst=4x64x24x24:aBcd16b flops=169869312
//
// The first word is the op kind ("conv", "conv_backward_data", "relu",
// "reorder", ...; tools group by it), words without '=' after it are the
// op's attributes (a convolution's stride and padding), `role=dims:layout`
// are the arguments in the kernel's order (oneDNN's roles src, weights,
// diff_dst, ...; layouts in oneDNN's format-tag notation), and `flops=N` is
// the count of floating-point operations, left out where none is meaningful
// (reorders, copies). Two kernels with one signature do the same work on the
// same shapes and layouts, so one profile holds for both.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cachedarrays::plan {

/// One argument as a signature names it.
struct SignatureArg {
  std::string role;                ///< oneDNN's role: "src", "weights", "diff_dst", ...
  std::vector<std::int64_t> dims;  ///< logical dims, outermost first
  std::string layout;              ///< oneDNN format tag: "abcd", "aBcd16b", ...
};

/// The signature line "<kind and attributes> role=dims:layout ... [flops=N]"
/// (flops = 0: none). Throws invalid_argument for an empty kind or a role
/// or layout holding a space, '=' or ':' (the separators of the line).
[[nodiscard]] std::string make_signature(std::string_view kind_and_attributes, std::span<const SignatureArg> args,
                                         std::uint64_t flops);

/// The op kind: the signature's first word ("conv" of "conv s1p1 src=...").
[[nodiscard]] std::string_view kernel_kind(std::string_view signature) noexcept;

/// The FLOPs a signature gives, 0 when it gives none (a reorder, a scoped
/// "read()" access). Throws invalid_argument when `flops=` holds no number.
[[nodiscard]] std::uint64_t kernel_flops(std::string_view signature);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/kernel_signature-inl.hpp"
#endif
