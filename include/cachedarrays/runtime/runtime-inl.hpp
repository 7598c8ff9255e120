// Implementation of runtime.hpp (header-only mode includes it from there; the
// compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/runtime.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/manager/fault_injection.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/runtime/environment.hpp"
#include "cachedarrays/runtime/program_tiers.hpp"

namespace cachedarrays {

namespace detail {

// Tests only (manager/fault_injection.hpp): the policy's handler fails
// before it runs, as a policy's own error would. Not for retire and
// collect: they run from destructors, where a policy must not throw.
CACHEDARRAYS_INLINE void inject_handler_fault([[maybe_unused]] const char* handler) {
  if (CACHEDARRAYS_FAULT(policy_handler)) {
    throw error(std::string("cachedarrays: the policy's ") + handler + " handler failed (injected fault)");
  }
}

// The process's settings for the heaps and the copy engine, from its
// environment, before the devices are reserved: a bad CACHEDARRAYS_COPY is
// better refused here, where the user configures, than from the first copy
// (perhaps on the mover's thread).
CACHEDARRAYS_INLINE std::vector<DeviceSpec> with_process_environment(std::vector<DeviceSpec> devices) {
  apply_process_environment(read_process_environment(process_environment));
  return devices;
}

}  // namespace detail

CACHEDARRAYS_INLINE Runtime::Runtime(std::vector<DeviceSpec> devices, std::unique_ptr<policy::Policy> policy,
                                     MoverOptions mover, std::filesystem::path trace_file)
    : manager_(detail::with_process_environment(std::move(devices)), std::move(mover)),
      policy_(policy != nullptr ? std::move(policy) : std::make_unique<policy::FirstTouch>()) {
  policy_->attach(manager_);
  adopt_policy_answers();
  apply_environment(read_runtime_environment(process_environment));
  if (!trace_file.empty()) {
    const std::filesystem::path extension = trace_file.extension();
    if (extension != ".json" && extension != ".csv") {
      throw invalid_argument("cachedarrays: trace file '" + trace_file.string() +
                             "' must end in .json (Chrome trace) or .csv");
    }
    trace_file_ = std::move(trace_file);
    (void)start_trace();
  }
}

// Members go in reverse order: the policy (which may own per-object state)
// before the manager, which frees whatever objects are still alive — after
// the leak report has named them.
CACHEDARRAYS_INLINE Runtime::~Runtime() {
  if (leak_report_.wanted()) {
    leak_report_.write([&] {
      std::lock_guard guard(placement_);
      return snapshot_locked(SnapshotReason::request, 0, 0);
    });
  }
  if (!trace_file_.empty() && trace_ != nullptr) {
    try {
      trace_->save(trace_file_.string(), device_names());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cachedarrays: the trace was not written: %s\n", e.what());
    }
  }
  recorder_.write_output(program_.get());
}

CACHEDARRAYS_INLINE void Runtime::set_program_output(std::filesystem::path path) {
  path = ProgramRecorder::checked_output(std::move(path));
  bool record = false;
  {
    const Lock guard(*this);
    recorder_.set_output(std::move(path));
    record = !recorder_.output().empty() && program_ == nullptr && !recorder_.pending();
  }
  if (record) record_program();
}

CACHEDARRAYS_INLINE Object& Runtime::create_object(std::uint64_t bytes) {
  const Lock guard(*this);
  Object& object = manager_.create_object(bytes);
  bool placed = false;
  try {
    Object::History& history = object.history();
    history.made_by_runtime = true;
    history.created_iteration = iteration_;
    history.created_ns = ns_since_start();
    detail::inject_handler_fault("place");
    placed = policy_->place(object);
  } catch (...) {
    manager_.destroy(object);
    throw;
  }
  if (placed) refresh_hint_delivery(object);
  if (placed && recording_ != nullptr) record(TraceKind::create, object);
  if (!placed) {
    // Snapshot the usage before destroying: the message shows what the
    // policy saw. Nothing else changes: every other object stays intact.
    std::vector<DeviceUsage> devices = manager_.usage();
    manager_.destroy(object);
    // The memory snapshot after: it lists the objects that filled the
    // tiers, not the one that found no room.
    SnapshotDirectory::Written snapshot = write_out_of_memory_snapshot(bytes);
    throw out_of_memory(bytes, std::move(devices), std::move(snapshot.path), snapshot.failure);
  }
  return object;
}

CACHEDARRAYS_INLINE void Runtime::record(TraceKind kind, const Object& object, std::uint8_t detail) {
  TraceEvent e;
  e.kind = kind;
  e.object = object.id();
  e.bytes = object.bytes();
  e.detail = detail;
  recording_->record(e);
}

CACHEDARRAYS_INLINE Trace& Runtime::start_trace() {
  const Lock guard(*this);
  trace_ = std::make_unique<Trace>();
  std::vector<std::uint64_t> occupancy;
  for (const DeviceUsage& u : manager_.usage()) occupancy.push_back(u.bytes_used);
  trace_->set_initial_occupancy(std::move(occupancy));
  set_recording(trace_.get());
  manager_.set_trace(recording_);
  recorder_.trace_kept();
  return *trace_;
}

CACHEDARRAYS_INLINE void Runtime::stop_trace() {
  const Lock guard(*this);
  set_recording(nullptr);
  manager_.set_trace(nullptr);
}

CACHEDARRAYS_INLINE void Runtime::record_program() {
  const Lock guard(*this);
  start_program_recording();
}

CACHEDARRAYS_INLINE void Runtime::start_program_recording() {
  recorder_.start(recording_ == nullptr);
  if (recorder_.own_trace()) {
    trace_ = std::make_unique<Trace>();
    set_recording(trace_.get());
    manager_.set_trace(recording_);
  }
}

CACHEDARRAYS_INLINE void Runtime::set_program(plan::Program program) {
  const Lock guard(*this);
  install_program(std::make_shared<const plan::Program>(std::move(program)));
}

CACHEDARRAYS_INLINE void Runtime::install_program(std::shared_ptr<const plan::Program> program) {
  program_ = std::move(program);
  profiling_.program_installed(program_.get());
  policy_->on_program(program_);
}

CACHEDARRAYS_INLINE void Runtime::set_profile_iterations(std::uint32_t iterations) {
  const Lock guard(*this);
  profiling_.set_iterations(iterations);
}

CACHEDARRAYS_INLINE void Runtime::profile_kernel(const char* name, std::uint64_t index,
                                                 std::span<Object* const> objects, std::span<const Access> accesses,
                                                 double seconds, double emulated_ns) {
  const Lock guard(*this);
  profiling_.add(name, index, objects, accesses, seconds, emulated_ns, manager_);
}

CACHEDARRAYS_INLINE std::shared_ptr<const plan::Program> Runtime::program() const {
  std::lock_guard guard(placement_);
  return program_;
}

CACHEDARRAYS_INLINE void Runtime::finish_program_recording() {
  if (!recorder_.due(iteration_) || recording_ == nullptr) return;
  const bool own_trace = recorder_.own_trace();
  const auto drop_own_trace = [&] {
    if (!own_trace) return;  // the trace was only for the program: drop it
    set_recording(nullptr);
    manager_.set_trace(nullptr);
    trace_.reset();
  };
  std::shared_ptr<const plan::Program> program;
  try {
    program = recorder_.finish(*recording_, program_tiers(manager_));
  } catch (...) {
    drop_own_trace();
    throw;
  }
  drop_own_trace();
  install_program(std::move(program));
}

CACHEDARRAYS_INLINE std::vector<std::string> Runtime::device_names() const {
  std::vector<std::string> names;
  for (DeviceId d = 0; d < manager_.device_count(); ++d) names.push_back(manager_.spec(d).display_name());
  return names;
}

CACHEDARRAYS_INLINE void Runtime::end_kernel(const char* kernel, std::uint64_t index, std::span<Object* const> objects,
                                             std::span<const Access> accesses) {
  if (!kernel_end_heard()) return;
  const Lock guard(*this);
  if (kernel_hooks_.load(std::memory_order_relaxed)) {
    detail::inject_handler_fault("on_kernel_end");
    policy_->on_kernel_end({iteration_, index, kernel, objects, accesses});
  }
  if (recording_ == nullptr) return;
  TraceEvent e;
  e.kind = TraceKind::kernel_end;
  e.name = recording_->intern(kernel);
  recording_->record(e);
}

CACHEDARRAYS_INLINE void Runtime::begin_iteration() { begin_iteration(true); }

CACHEDARRAYS_INLINE void Runtime::begin_unplanned_iteration() { begin_iteration(false); }

CACHEDARRAYS_INLINE void Runtime::begin_iteration(bool planned) {
  const Lock guard(*this);
  ++iteration_;
  kernel_index_ = 0;
  unlocked_kernels_base_ = unlocked_kernels_.sum(0);
  // A policy that wants a program and was given none records the first
  // iteration's, as record_program() would.
  if (recorder_.ask_once(planned, program_ != nullptr) && policy_->records_program()) start_program_recording();
  // The program recorded by record_program: its iteration has just ended.
  finish_program_recording();
  // The profiles of the program's kernels, once its last timed iteration ended.
  if (std::shared_ptr<const plan::Program> profiled = profiling_.advance(planned, program_, manager_)) {
    program_ = std::move(profiled);
    policy_->on_profiles(program_);
  }
  recorder_.iteration_begun(iteration_);
  if (recording_ != nullptr) recording_->record({.kind = TraceKind::iteration, .object = iteration_});
  detail::inject_handler_fault("on_iteration_begin");
  if (planned) {
    policy_->on_iteration_begin(iteration_);
  } else {
    policy_->on_unplanned_iteration_begin(iteration_);
  }
  if (policy_->answers_version() != policy_answers_version_) adopt_policy_answers();
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::iteration() const {
  std::lock_guard guard(placement_);
  return iteration_;
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::kernels_in_iteration() const {
  std::lock_guard guard(placement_);
  return kernel_index_ + (unlocked_kernels_.sum(0) - unlocked_kernels_base_);
}

CACHEDARRAYS_INLINE void Runtime::hint(Object& object, Hint hint) {
  if (hint == Hint::retire) {
    retire(object);
    return;
  }
  if (hint == Hint::will_read && try_hint_unlocked(object)) return;
  const Lock guard(*this);
  dispatch_hint(object, hint, HintSource::program);
  refresh_hint_delivery(object);
}

CACHEDARRAYS_INLINE void Runtime::dispatch_hint(Object& object, Hint hint, HintSource source) {
  // Retire runs from destructors, where a policy must not throw.
  if (hint != Hint::retire) detail::inject_handler_fault(to_string(hint));
  if (source == HintSource::program && recording_ != nullptr) {
    if (hint == Hint::retire) {
      record(TraceKind::retire, object);
    } else {
      record(TraceKind::hint, object, static_cast<std::uint8_t>(hint));
    }
  }
  // Before the policy, which may destroy a retired object now or keep it
  // for a collection (then it is no leak).
  object.hinted(hint);
  switch (hint) {
    case Hint::will_use: policy_->will_use(object); break;
    case Hint::will_read: policy_->will_read(object); break;
    case Hint::will_write: policy_->will_write(object); break;
    case Hint::archive: policy_->archive(object); break;
    case Hint::retire: policy_->retire(object); break;
  }
}

CACHEDARRAYS_INLINE std::byte* Runtime::acquire_locked(Object& object, Access access, std::size_t thread,
                                                       detail::PinToken& token, double& emulated_ns) {
  dispatch_hint(object, access == Access::read ? Hint::will_read : Hint::will_write, HintSource::kernel_argument);
  token = manager_.pin(object, access, thread);
  try {
    // A policy's delivery answer may throw: the pin must not outlive it.
    refresh_hint_delivery(object);
    emulated_ns += manager_.note_access(object, access);
  } catch (...) {
    DataManager::unpin(object, access, token);
    throw;
  }
  return manager_.pointer(*manager_.getprimary(object));
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::acquire_all(Object* const* objects, const Access* accesses, std::byte** data,
                                                       detail::PinToken* tokens, std::size_t n, const char* kernel,
                                                       double* emulated_out) {
  double emulated_ns = 0;
  if (emulated_out == nullptr && try_acquire_unlocked(objects, accesses, data, tokens, n, emulated_ns)) {
    if (emulated_ns > 0) emulation::wait_ns(emulated_ns);
    return 0;  // only a policy that follows kernels reads the index, and it never lets reads skip the lock
  }
  std::uint64_t index = 0;
  {
    // The policy's copies for later kernels wake the mover once the lock is
    // let go: a mover thread woken now would preempt this thread, which
    // holds the lock and is the one the next kernel waits for.
    struct MoverWakesHeld {
      DataManager& manager;
      explicit MoverWakesHeld(DataManager& m) : manager(m) { manager.hold_mover_wakes(); }
      ~MoverWakesHeld() { manager.release_mover_wakes(); }
      MoverWakesHeld(const MoverWakesHeld&) = delete;
      MoverWakesHeld& operator=(const MoverWakesHeld&) = delete;
    } wakes(manager_);
    const Lock guard(*this);
    std::size_t pinned = 0;
    const std::size_t thread = detail::this_thread_number();
    try {
      // Hint and pin one argument at a time: once pinned, a later argument's
      // hint cannot evict it.
      for (; pinned < n; ++pinned) {
        data[pinned] = acquire_locked(*objects[pinned], accesses[pinned], thread, tokens[pinned], emulated_ns);
      }
      index = kernel_index_;
      if (kernel_hooks_.load(std::memory_order_relaxed)) {
        detail::inject_handler_fault("on_kernel_begin");
        policy_->on_kernel_begin({iteration_, index, kernel, std::span(objects, n), std::span(accesses, n)});
      }
      ++kernel_index_;
    } catch (...) {
      while (pinned > 0) {
        --pinned;
        release(*objects[pinned], accesses[pinned], tokens[pinned]);
      }
      throw;
    }
    if (recording_ != nullptr) {
      std::vector<TraceArg> args(n);
      for (std::size_t i = 0; i < n; ++i) {
        const Object& o = *objects[i];
        args[i] = {o.id(), o.bytes(), accesses[i] == Access::write, manager_.device(*manager_.getprimary(o))};
      }
      recording_->record_kernel(kernel, args);
    }
  }
  emulation::wait_ns(emulated_ns);
  if (emulated_out != nullptr) *emulated_out = emulated_ns;
  return index;
}

CACHEDARRAYS_INLINE void Runtime::retire(Object& object) {
  const Lock guard(*this);
  if (object.pinned()) {
    throw pinned_error("cachedarrays: cannot retire array #" + std::to_string(object.id()) +
                       " while a read()/write() access or kernel on it is open; end that scope first");
  }
  dispatch_hint(object, Hint::retire, HintSource::program);
}

CACHEDARRAYS_INLINE void Runtime::collect() {
  const Lock guard(*this);
  if (recording_ != nullptr) recording_->record({.kind = TraceKind::collect});
  policy_->collect();
  manager_.poll_copies();
}

CACHEDARRAYS_INLINE Stats Runtime::stats() const {
  std::lock_guard guard(placement_);
  Stats s = manager_.stats();
  s.lock = lock_counters_;
  return s;
}

CACHEDARRAYS_INLINE std::vector<DeviceUsage> Runtime::usage() const {
  std::lock_guard guard(placement_);
  return manager_.usage();
}

CACHEDARRAYS_INLINE std::string Runtime::policy_name() const {
  const std::lock_guard guard(policy_name_mutex_);
  return policy_name_;
}

CACHEDARRAYS_INLINE policy::HandOver Runtime::switch_policy(std::unique_ptr<policy::Policy> next) {
  if (next == nullptr) {
    throw invalid_argument("cachedarrays: switch_policy needs a policy; got none (null)");
  }
  const Lock guard(*this);
  policy::HandOver done;
  try {
    done = policy::hand_over(manager_, *policy_, *next);
  } catch (...) {
    // No object holds policy state now; first-touch needs none and moves
    // nothing, so the program goes on where its objects lie.
    next = std::make_unique<policy::FirstTouch>();
    next->attach(manager_);
    policy_ = std::move(next);
    adopt_policy_answers();
    throw;
  }
  policy_ = std::move(next);
  adopt_policy_answers();
  if (program_ != nullptr) policy_->on_program(program_);
  return done;
}

CACHEDARRAYS_INLINE void Runtime::adopt_policy_answers() {
  {
    const std::lock_guard guard(policy_name_mutex_);
    policy_name_ = policy_->name();
  }
  policy_answers_version_ = policy_->answers_version();
  const bool hooks = policy_->follows_kernels();
  kernel_hooks_.store(hooks, std::memory_order_relaxed);
#ifdef CACHEDARRAYS_FAULT_INJECTION
  unlocked_reads_.store(false, std::memory_order_relaxed);  // the injected faults' sites are under the lock
#else
  unlocked_reads_.store(!hooks, std::memory_order_relaxed);
#endif
  manager_.for_each_object([this](Object& object) {
    object.read_delivery_.store(static_cast<std::uint8_t>(HintDelivery::under_lock), std::memory_order_relaxed);
    object.write_delivery_.store(static_cast<std::uint8_t>(HintDelivery::under_lock), std::memory_order_relaxed);
    refresh_hint_delivery(object);
  });
}

// ---- memory snapshots (runtime/memory_snapshot.hpp) ---------------------------

CACHEDARRAYS_INLINE MemorySnapshot Runtime::snapshot(std::size_t trace_events) const {
  std::lock_guard guard(placement_);
  return snapshot_locked(SnapshotReason::request, 0, trace_events);
}

CACHEDARRAYS_INLINE MemorySnapshot Runtime::snapshot_locked(SnapshotReason reason, std::uint64_t requested_bytes,
                                                            std::size_t trace_events) const {
  MemorySnapshot s;
  s.reason = reason;
  s.requested_bytes = requested_bytes;
  s.policy = policy_->name();
  s.iteration = iteration_;
  s.kernels_in_iteration = kernel_index_ + (unlocked_kernels_.sum(0) - unlocked_kernels_base_);
  s.taken_ns = ns_since_start();
  detail::fill_snapshot(s, manager_, trace_.get(), trace_events);
  return s;
}

CACHEDARRAYS_INLINE SnapshotDirectory::Written Runtime::write_out_of_memory_snapshot(
    std::uint64_t requested_bytes) const {
  return snapshot_directory_.write(
      [&] { return snapshot_locked(SnapshotReason::out_of_memory, requested_bytes, default_snapshot_trace_events); });
}

CACHEDARRAYS_INLINE void Runtime::set_snapshot_directory(std::filesystem::path directory) {
  directory = SnapshotDirectory::checked(std::move(directory));
  std::lock_guard guard(placement_);
  snapshot_directory_.set(std::move(directory));
}

CACHEDARRAYS_INLINE std::filesystem::path Runtime::snapshot_directory() const {
  std::lock_guard guard(placement_);
  return snapshot_directory_.path();
}

CACHEDARRAYS_INLINE void Runtime::set_leak_report(std::ostream* out) {
  std::lock_guard guard(placement_);
  leak_report_.set(out);
}

CACHEDARRAYS_INLINE void Runtime::apply_environment(const RuntimeEnvironment& env) {
  if (env.snapshot_dir) set_snapshot_directory(*env.snapshot_dir);
  if (env.leak_report) set_leak_report(*env.leak_report ? &std::cerr : nullptr);
  if (env.program_out) set_program_output(*env.program_out);
}

}  // namespace cachedarrays
