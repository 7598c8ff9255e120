// What the copy engine is told for the whole process: the stores its copies
// use (CACHEDARRAYS_COPY) and the widest vector path of its streaming copies
// (CACHEDARRAYS_NT_ISA). The manager layer reads no environment; the runtime
// layer reads both variables (runtime/environment.hpp) and sets them here.
// The engine makes each choice once, at the first copy that needs it: a
// setting changed after that changes nothing.
#pragma once

#include <atomic>
#include <cstdint>

namespace cachedarrays {

/// The stores the copy engine's copies use.
enum class CopyMode : std::uint8_t {
  automatic,    ///< measured per size band on this CPU at the first copy (the default)
  nontemporal,  ///< non-temporal vector stores in every band
  memcpy,       ///< memcpy in every band
};

/// The widest vector path of the streaming (non-temporal) copies, so that
/// tests and benchmarks can exercise the narrower ones on a machine that has
/// the wider.
enum class StreamIsa : std::uint8_t { avx512, avx2, sse2 };

namespace detail {

inline std::atomic<CopyMode> copy_mode_setting{CopyMode::automatic};
inline std::atomic<StreamIsa> stream_isa_setting{StreamIsa::avx512};

}  // namespace detail

/// Sets the mode the process's copy choice is made in; before the first copy.
inline void set_copy_mode(CopyMode mode) noexcept { detail::copy_mode_setting.store(mode, std::memory_order_relaxed); }
/// The mode set_copy_mode gave; automatic unless set.
[[nodiscard]] inline CopyMode copy_mode() noexcept { return detail::copy_mode_setting.load(std::memory_order_relaxed); }

/// Caps the streaming copies' vector path; before the first streaming copy.
inline void set_stream_isa_cap(StreamIsa cap) noexcept {
  detail::stream_isa_setting.store(cap, std::memory_order_relaxed);
}
/// The cap set_stream_isa_cap gave; avx512 (none) unless set.
[[nodiscard]] inline StreamIsa stream_isa_cap() noexcept {
  return detail::stream_isa_setting.load(std::memory_order_relaxed);
}

}  // namespace cachedarrays
