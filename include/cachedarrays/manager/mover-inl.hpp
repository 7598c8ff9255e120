// Implementation of mover.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/mover.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>
#include <utility>

#include <sched.h>
#include <sys/resource.h>

#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/manager/fault_injection.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE Mover::Mover(MoverOptions options) : options_(std::move(options)) {
  if (options_.threads == 0) {
    throw invalid_argument("cachedarrays: a mover needs at least 1 thread (MoverOptions::threads = 0 given)");
  }
}

CACHEDARRAYS_INLINE Mover::~Mover() {
  // The threads drain the queue before they look at the stop request. It
  // is made under the queue's lock: a thread that has just found the queue
  // empty and no stop requested holds that lock until it waits, so the
  // request and the notification cannot fall between its check and its
  // wait (a lost wake-up, seen as an ASan run hanging in this destructor).
  {
    std::lock_guard guard(mutex_);
    for (std::jthread& t : threads_) t.request_stop();
  }
  queued_.notify_all();
  threads_.clear();  // joins
}

CACHEDARRAYS_INLINE bool Mover::submit(std::shared_ptr<detail::CopyState> state) {
  {
    std::lock_guard guard(mutex_);
    // Threads start with the first copy: a program that never copies
    // asynchronously never pays for them. A thread the system refuses is
    // tried again at the next copy; with none running at all, the caller
    // makes the copy itself (nothing would ever take it off the queue).
    while (threads_.size() < options_.threads) {
      try {
        if (CACHEDARRAYS_FAULT(mover_start)) {  // tests only
          throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                  "cachedarrays: mover thread (injected fault)");
        }
        threads_.emplace_back([this](std::stop_token stop) { run(stop); });
      } catch (const std::system_error&) {
        if (threads_.empty()) return false;
        break;
      }
    }
    if (state->background) {
      queue_.push_back(std::move(state));
    } else {
      queue_.insert(queue_.begin() + static_cast<std::ptrdiff_t>(foreground_), std::move(state));
      ++foreground_;
    }
    if (wake_holds_ > 0) {
      ++held_wakes_;
      return true;
    }
  }
  queued_.notify_one();
  return true;
}

CACHEDARRAYS_INLINE void Mover::hold_wakes() {
  std::lock_guard guard(mutex_);
  ++wake_holds_;
}

CACHEDARRAYS_INLINE void Mover::release_wakes() noexcept {
  std::size_t wakes = 0;
  {
    std::lock_guard guard(mutex_);
    if (wake_holds_ == 0) return;
    if (--wake_holds_ > 0) return;
    wakes = std::exchange(held_wakes_, 0);
  }
  if (wakes == 1) {
    queued_.notify_one();
  } else if (wakes > 1) {
    queued_.notify_all();
  }
}

CACHEDARRAYS_INLINE void Mover::run(std::stop_token stop) {
  if (options_.priority == MoverPriority::idle) {
    // This thread only (pid 0 is the caller on Linux); needs no privilege.
    // Where the scheduler refuses, the lowest nice value does the same less
    // strictly.
    sched_param none{};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) (void)setpriority(PRIO_PROCESS, 0, 19);
  }
  for (;;) {
    std::shared_ptr<detail::CopyState> state;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return !queue_.empty() || stop.stop_requested(); });
      if (queue_.empty()) return;  // stopping, and nothing left to copy
      state = std::move(queue_.front());
      queue_.pop_front();
      if (foreground_ > 0) --foreground_;
    }
    make_and_complete(*state, options_);
  }
}

CACHEDARRAYS_INLINE void Mover::make_and_complete(detail::CopyState& state, const MoverOptions& options) noexcept {
  std::exception_ptr failure;
  try {
    make(state, options);
  } catch (...) {
    failure = std::current_exception();
  }
  state.complete(std::move(failure));
}

CACHEDARRAYS_INLINE bool Mover::withdraw(const detail::CopyState& state) {
  std::lock_guard guard(mutex_);
  const auto at = std::find_if(queue_.begin(), queue_.end(), [&](const auto& s) { return s.get() == &state; });
  if (at == queue_.end()) return false;  // started (or done)
  if (at - queue_.begin() < static_cast<std::ptrdiff_t>(foreground_)) --foreground_;
  queue_.erase(at);
  return true;
}

CACHEDARRAYS_INLINE void Mover::make(detail::CopyState& state, const MoverOptions& options) {
  // The process's choice of stores is made at its first copy, and takes
  // longer than many copies: it is no part of this copy's time, which the
  // emulated bandwidth is set against.
  if (state.dst != nullptr) static_cast<void>(detail::process_copy_decision());
  const auto t0 = std::chrono::steady_clock::now();
  if (options.before_copy) options.before_copy(state.bytes);
  if (state.dst != nullptr && CACHEDARRAYS_FAULT(copy)) {  // tests only: a media error half way
    detail::copy_bytes(state.dst, state.src, state.bytes / 2, state.where, {.max_threads = 1});
    throw copy_error("cachedarrays: an asynchronous copy of " + format_bytes(state.bytes) +
                     " failed half way (injected media error); its destination holds no valid copy, "
                     "its source is untouched");
  }
  // One thread per copy: the mover runs beside the compute threads and must
  // not take their cores for a parallel copy.
  if (state.dst != nullptr) {
    detail::copy_bytes(state.dst, state.src, state.bytes, state.where, {.max_threads = 1});
  }
  const auto spent = [&] {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  };
  // The emulated time a copy owes is slept, not spun: a spinning mover
  // would take a core from the kernels it runs beside.
  // Sleep overshoots; the overshoot is credited to the next copies of this
  // mover thread, so that the mover's throughput stays the emulated one.
  thread_local double credit_ns = 0;
  const auto hold = [&](double owed) {
    const double pay = owed - credit_ns;
    if (pay <= 0) {
      credit_ns -= owed;
      return;
    }
    credit_ns = emulation::sleep_ns(pay) - pay;
  };
  double held = 0;
  if (state.least_ns > spent()) {
    held = state.least_ns - spent();
    hold(held);
  }
  if (state.after_ns > 0) {
    hold(state.after_ns);
    held += state.after_ns;
  }
  state.emulated_wait_ns = static_cast<std::uint64_t>(held);
  state.busy_ns = static_cast<std::uint64_t>(spent());
}

}  // namespace cachedarrays
