// Runtime::kernel: the kernel programming model of paper III-C "Data
// Access". Arguments are grouped by role — reads(...) and writes(...) — and
// the callable receives one resolved span per array, in the order given:
//
//   rt.kernel(ca::reads(x, w), ca::writes(y),
//             [](std::span<const float> x, std::span<const float> w, std::span<float> y) {...});
//
// All arguments are hinted and pinned under one lock acquisition before the
// callable runs, and unpinned (without the lock) when it returns or throws:
// a PinnedKernel scope.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cachedarrays/runtime/cached_array.hpp"
#include "cachedarrays/runtime/pinned_kernel.hpp"

namespace cachedarrays {

namespace detail {

template <typename T, Access A>
struct KernelArg {
  using array_type = std::conditional_t<A == Access::read, const CachedArray<T>, CachedArray<T>>;
  using span_type = std::span<std::conditional_t<A == Access::read, const T, T>>;
  static constexpr Access access = A;
  array_type* array;
};

template <typename T>
struct IsArgGroup : std::false_type {};
template <typename... Ts, Access... As>
struct IsArgGroup<std::tuple<KernelArg<Ts, As>...>> : std::true_type {};

template <typename Arg>
typename Arg::span_type make_span(const Arg& arg, std::byte* data) {
  using Element = typename Arg::span_type::element_type;
  return {reinterpret_cast<Element*>(data), arg.array->size()};
}

template <typename Tuple, std::size_t... I>
auto make_spans(const Tuple& args, const std::array<std::byte*, sizeof...(I)>& data,
                std::index_sequence<I...>) {
  return std::make_tuple(make_span(std::get<I>(args), data[I])...);
}

}  // namespace detail

/// Arrays the kernel only reads: each gets will_read and a read pin, and the
/// callable a `std::span<const T>` of it. An argument group of Runtime::kernel.
template <typename... Ts>
[[nodiscard]] auto reads(const CachedArray<Ts>&... arrays) {
  return std::tuple<detail::KernelArg<Ts, Access::read>...>{{&arrays}...};
}

/// Arrays the kernel writes (or reads and writes): will_write, a write pin,
/// and the primary is marked dirty; the callable gets a `std::span<T>`. An
/// argument group of Runtime::kernel.
template <typename... Ts>
[[nodiscard]] auto writes(CachedArray<Ts>&... arrays) {
  return std::tuple<detail::KernelArg<Ts, Access::write>...>{{&arrays}...};
}

template <typename... Args>
void Runtime::kernel(Args&&... groups_then_callable) {
  static_assert(sizeof...(Args) >= 1, "kernel(reads(...), writes(...), callable)");
  auto all = std::forward_as_tuple(std::forward<Args>(groups_then_callable)...);
  constexpr std::size_t groups = sizeof...(Args) - 1;
  auto& callable = std::get<groups>(all);

  auto args = [&]<std::size_t... G>(std::index_sequence<G...>) {
    static_assert((detail::IsArgGroup<std::remove_cvref_t<std::tuple_element_t<G, decltype(all)>>>::value && ...),
                  "every argument of kernel() but the last must be reads(...) or writes(...)");
    return std::tuple_cat(std::get<G>(all)...);
  }(std::make_index_sequence<groups>{});

  constexpr std::size_t n = std::tuple_size_v<decltype(args)>;
  std::array<Object*, n> objects{};
  std::array<Access, n> accesses{};
  std::array<std::byte*, n> data{};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((objects[I] = &std::get<I>(args).array->object(), accesses[I] = std::tuple_element_t<I, decltype(args)>::access),
     ...);
  }(std::make_index_sequence<n>{});
  PinnedKernel pinned(*this, "kernel", objects, accesses, data);
  std::apply(callable, detail::make_spans(args, data, std::make_index_sequence<n>{}));
  pinned.finish();
}

}  // namespace cachedarrays
