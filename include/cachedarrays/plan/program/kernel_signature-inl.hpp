// Implementation of kernel_signature.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"

#include <charconv>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

namespace detail {

inline constexpr std::string_view signature_flops_key = " flops=";

CACHEDARRAYS_INLINE void check_signature_word(std::string_view what, std::string_view word) {
  if (word.find_first_of(" =:") == std::string_view::npos) return;
  throw invalid_argument("cachedarrays: a kernel signature's " + std::string(what) + " '" + std::string(word) +
                         "' holds a space, '=' or ':', which separate the signature's fields");
}

}  // namespace detail

CACHEDARRAYS_INLINE std::string make_signature(std::string_view kind_and_attributes, std::span<const SignatureArg> args,
                                               std::uint64_t flops) {
  if (kernel_kind(kind_and_attributes).empty()) {
    throw invalid_argument("cachedarrays: a kernel signature needs an op kind as its first word, got '" +
                           std::string(kind_and_attributes) + "'");
  }
  std::string s(kind_and_attributes);
  for (const SignatureArg& a : args) {
    detail::check_signature_word("role", a.role);
    detail::check_signature_word("layout", a.layout);
    s += ' ';
    s += a.role;
    s += '=';
    for (std::size_t i = 0; i < a.dims.size(); ++i) {
      if (i > 0) s += 'x';
      s += std::to_string(a.dims[i]);
    }
    s += ':';
    s += a.layout;
  }
  if (flops > 0) {
    s += detail::signature_flops_key;
    s += std::to_string(flops);
  }
  return s;
}

CACHEDARRAYS_INLINE std::string_view kernel_kind(std::string_view signature) noexcept {
  return signature.substr(0, signature.find(' '));
}

CACHEDARRAYS_INLINE std::uint64_t kernel_flops(std::string_view signature) {
  const std::size_t at = signature.rfind(detail::signature_flops_key);
  if (at == std::string_view::npos) return 0;
  const std::string_view digits = signature.substr(at + detail::signature_flops_key.size());
  std::uint64_t flops = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), flops);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    throw invalid_argument("cachedarrays: kernel signature '" + std::string(signature) +
                           "' ends in 'flops=" + std::string(digits) + "', which is not a count of operations");
  }
  return flops;
}

}  // namespace cachedarrays::plan
