// The one "pin these objects, unpin on every exit" scope: Runtime::kernel,
// the nn trainer's kernels and the replay simulator all run a kernel through
// it. Constructing it hints every argument (will_read / will_write), pins it
// before the next one is hinted (so a later hint cannot evict an earlier
// argument) and resolves its primary pointer, all under one lock; the
// destructor unpins them, whether the kernel returned or threw.
//
// The caller owns the three arrays (objects, accesses, resolved pointers),
// so that Runtime::kernel keeps them on its stack; they must outlive the
// scope.
#pragma once

#include "cachedarrays/config.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

/// The one "pin these objects, unpin on every exit" scope (see the file
/// comment): Runtime::kernel, the nn trainer's kernels and the replay
/// simulator run their kernels through it.
class PinnedKernel {
 public:
  /// Pins objects[i] for accesses[i] and writes its primary pointer to
  /// data[i]. `name` (kept, not copied) names the kernel in a trace. Throws
  /// invalid_argument unless the three spans have the same size; whatever the
  /// policy or the manager throws leaves nothing pinned.
  ///
  /// `emulated_ns`, when not null, receives the emulated slow-tier charge the
  /// arguments paid (waited out before the constructor returns), and the
  /// arguments are pinned under the runtime's lock, so that index() is the
  /// kernel's place in the iteration: what Runtime::kernel times kernels
  /// with while it profiles them.
  PinnedKernel(Runtime& runtime, const char* name, std::span<Object* const> objects, std::span<const Access> accesses,
               std::span<std::byte*> data, double* emulated_ns = nullptr);
  /// Unpins every object, whether the kernel returned or threw.
  ~PinnedKernel();
  PinnedKernel(const PinnedKernel&) = delete;
  PinnedKernel& operator=(const PinnedKernel&) = delete;

  /// The kernel's index in the iteration (Policy::on_kernel_begin's); 0
  /// for a kernel whose reads skipped the lock.
  [[nodiscard]] std::uint64_t index() const noexcept { return index_; }

  /// The kernel ran to its end: a trace records its kernel_end. (A kernel
  /// that threw, and a read()/write() scoped access, have none.)
  void finish() {
    if (runtime_.kernel_end_heard()) runtime_.end_kernel(name_, index_, objects_, accesses_);
  }

 private:
  Runtime& runtime_;
  const char* name_;
  std::span<Object* const> objects_;
  std::span<const Access> accesses_;
  std::uint64_t index_ = 0;  // in the iteration (Policy::on_kernel_begin)
  // Where each argument's pin is held: inline for the kernels of a thread's
  // slot count or fewer arguments (a thread cannot slot more at once).
  std::array<detail::PinToken, detail::pin_slots_per_thread> tokens_{};
  std::unique_ptr<detail::PinToken[]> more_tokens_;
  [[nodiscard]] detail::PinToken* tokens() noexcept { return more_tokens_ ? more_tokens_.get() : tokens_.data(); }
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/pinned_kernel-inl.hpp"
#endif
