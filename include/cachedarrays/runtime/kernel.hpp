// Runtime::kernel: the kernel programming model of paper III-C "Data
// Access". Arguments are grouped by role — reads(...) and writes(...) — and
// the callable receives one resolved span per array, in the order given:
//
//   rt.kernel(ca::reads(x, w), ca::writes(y),
//             [](std::span<const float> x, std::span<const float> w, std::span<float> y) {...});
//   rt.kernel("axpy", ca::reads(x), ca::writes(y), ...);  // named in the trace, the program, its profile
//
// All arguments are hinted and pinned under one lock acquisition before the
// callable runs, and unpinned (without the lock) when it returns or throws:
// a PinnedKernel scope.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"
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
auto make_spans(const Tuple& args, const std::array<std::byte*, sizeof...(I)>& data, std::index_sequence<I...>) {
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
void Runtime::kernel(Args&&... name_groups_then_callable) {
  static_assert(sizeof...(Args) >= 1, "kernel([name,] reads(...), writes(...), callable)");
  using First = std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Args...>>>;
  if constexpr (sizeof...(Args) >= 2 && std::is_convertible_v<const First&, std::string_view>) {
    [&](auto&& name, auto&&... rest) {
      const auto check = [](std::string_view n) {
        if (n.empty()) {
          throw invalid_argument(
              "cachedarrays: kernel(name, ...): the name is empty; give a kernel a name of at "
              "least one character, or none (it is then \"kernel\")");
        }
      };
      if constexpr (std::is_convertible_v<const First&, const char*>) {
        // A C string lives at least as long as the call, and the trace
        // copies what it keeps: no copy here.
        const char* n = name;
        if (n == nullptr) {
          throw invalid_argument(
              "cachedarrays: kernel(name, ...): the name is a null pointer; give a C string, "
              "or no name (it is then \"kernel\")");
        }
        check(n);
        run_kernel(n, std::forward<decltype(rest)>(rest)...);
      } else {
        // A string_view need not end in '\0': the pins take a C string.
        const std::string n{std::string_view(name)};
        check(n);
        run_kernel(n.c_str(), std::forward<decltype(rest)>(rest)...);
      }
    }(std::forward<Args>(name_groups_then_callable)...);
  } else {
    run_kernel(plan::unnamed_kernel.data(), std::forward<Args>(name_groups_then_callable)...);
  }
}

template <typename... Args>
void Runtime::run_kernel(const char* name, Args&&... groups_then_callable) {
  static_assert(sizeof...(Args) >= 1, "kernel([name,] reads(...), writes(...), callable)");
  auto all = std::forward_as_tuple(std::forward<Args>(groups_then_callable)...);
  constexpr std::size_t groups = sizeof...(Args) - 1;
  auto& callable = std::get<groups>(all);

  auto args = [&]<std::size_t... G>(std::index_sequence<G...>) {
    static_assert((detail::IsArgGroup<std::remove_cvref_t<std::tuple_element_t<G, decltype(all)>>>::value && ...),
                  "every argument of kernel() but the name and the last must be reads(...) or writes(...)");
    return std::tuple_cat(std::get<G>(all)...);
  }
  (std::make_index_sequence<groups>{});

  constexpr std::size_t n = std::tuple_size_v<decltype(args)>;
  std::array<Object*, n> objects{};
  std::array<Access, n> accesses{};
  std::array<std::byte*, n> data{};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((objects[I] = &std::get<I>(args).array->object(), accesses[I] = std::tuple_element_t<I, decltype(args)>::access),
     ...);
  }
  (std::make_index_sequence<n>{});
  if (!profiling()) [[likely]] {
    PinnedKernel pinned(*this, name, objects, accesses, data);
    std::apply(callable, detail::make_spans(args, data, std::make_index_sequence<n>{}));
    pinned.finish();
    return;
  }
  // Profiled (set_profile_iterations): from before the pins, whose emulated
  // charge is known, to the callable's end.
  const auto start = std::chrono::steady_clock::now();
  double emulated_ns = 0;
  PinnedKernel pinned(*this, name, objects, accesses, data, &emulated_ns);
  std::apply(callable, detail::make_spans(args, data, std::make_index_sequence<n>{}));
  pinned.finish();
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  profile_kernel(name, pinned.index(), objects, accesses, seconds.count(), emulated_ns);
}

}  // namespace cachedarrays
