// Implementation of runtime.hpp (header-only mode includes it from there; the
// compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/runtime.hpp"

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/policy/first_touch.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE Runtime::Runtime(std::vector<DeviceSpec> devices, std::unique_ptr<policy::Policy> policy,
                                     MoverOptions mover)
    : manager_(std::move(devices), std::move(mover)),
      policy_(policy != nullptr ? std::move(policy) : std::make_unique<policy::FirstTouch>()) {
  policy_->attach(manager_);
  kernel_hooks_ = policy_->follows_kernels();
}

// Members go in reverse order: the policy (which may own per-object state)
// before the manager, which frees whatever objects are still alive.
CACHEDARRAYS_INLINE Runtime::~Runtime() = default;

CACHEDARRAYS_INLINE Object& Runtime::create_object(std::uint64_t bytes) {
  std::lock_guard guard(mutex_);
  Object& object = manager_.create_object(bytes);
  bool placed = false;
  try {
    placed = policy_->place(object);
  } catch (...) {
    manager_.destroy(object);
    throw;
  }
  if (placed && recording_ != nullptr) record(TraceKind::create, object);
  if (!placed) {
    // Snapshot the usage before destroying: the message shows what the
    // policy saw. Nothing else changes: every other object stays intact.
    std::vector<DeviceUsage> devices = manager_.usage();
    manager_.destroy(object);
    throw out_of_memory(bytes, std::move(devices));
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
  std::lock_guard guard(mutex_);
  trace_ = std::make_unique<Trace>();
  std::vector<std::uint64_t> occupancy;
  for (const DeviceUsage& u : manager_.usage()) occupancy.push_back(u.bytes_used);
  trace_->set_initial_occupancy(std::move(occupancy));
  set_recording(trace_.get());
  manager_.set_trace(recording_);
  program_recording_.own_trace = false;
  return *trace_;
}

CACHEDARRAYS_INLINE void Runtime::stop_trace() {
  std::lock_guard guard(mutex_);
  set_recording(nullptr);
  manager_.set_trace(nullptr);
}

CACHEDARRAYS_INLINE void Runtime::record_program() {
  std::lock_guard guard(mutex_);
  program_recording_ = {.pending = true, .own_trace = recording_ == nullptr};
  if (program_recording_.own_trace) {
    trace_ = std::make_unique<Trace>();
    set_recording(trace_.get());
    manager_.set_trace(recording_);
  }
}

CACHEDARRAYS_INLINE void Runtime::set_program(plan::Program program) {
  std::lock_guard guard(mutex_);
  install_program(std::make_shared<const plan::Program>(std::move(program)));
}

CACHEDARRAYS_INLINE void Runtime::install_program(std::shared_ptr<const plan::Program> program) {
  program_ = std::move(program);
  policy_->on_program(program_);
}

CACHEDARRAYS_INLINE std::shared_ptr<const plan::Program> Runtime::program() const {
  std::lock_guard guard(mutex_);
  return program_;
}

CACHEDARRAYS_INLINE void Runtime::finish_program_recording() {
  ProgramRecording& r = program_recording_;
  if (!r.pending || r.first == 0 || iteration_ != r.first + 1 || recording_ == nullptr) return;
  r.pending = false;
  std::shared_ptr<const plan::Program> program;
  try {
    program = std::make_shared<const plan::Program>(plan::Program::from_trace(*recording_, r.first));
  } catch (...) {
    if (r.own_trace) {
      set_recording(nullptr);
      manager_.set_trace(nullptr);
      trace_.reset();
    }
    throw;
  }
  if (r.own_trace) {  // the trace was only for the program: drop it
    set_recording(nullptr);
    manager_.set_trace(nullptr);
    trace_.reset();
  }
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
  std::lock_guard guard(mutex_);
  if (kernel_hooks_) policy_->on_kernel_end({iteration_, index, kernel, objects, accesses});
  if (recording_ == nullptr) return;
  TraceEvent e;
  e.kind = TraceKind::kernel_end;
  e.name = recording_->intern(kernel);
  recording_->record(e);
}

CACHEDARRAYS_INLINE void Runtime::begin_iteration() { begin_iteration(true); }

CACHEDARRAYS_INLINE void Runtime::begin_unplanned_iteration() { begin_iteration(false); }

CACHEDARRAYS_INLINE void Runtime::begin_iteration(bool planned) {
  std::lock_guard guard(mutex_);
  ++iteration_;
  kernel_index_ = 0;
  // The program recorded by record_program: its iteration has just ended.
  finish_program_recording();
  if (program_recording_.pending && program_recording_.first == 0) program_recording_.first = iteration_;
  if (recording_ != nullptr) recording_->record({.kind = TraceKind::iteration, .object = iteration_});
  if (planned) {
    policy_->on_iteration_begin(iteration_);
  } else {
    policy_->on_unplanned_iteration_begin(iteration_);
  }
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::iteration() const {
  std::lock_guard guard(mutex_);
  return iteration_;
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::kernels_in_iteration() const {
  std::lock_guard guard(mutex_);
  return kernel_index_;
}

CACHEDARRAYS_INLINE void Runtime::hint(Object& object, Hint hint) {
  if (hint == Hint::retire) {
    retire(object);
    return;
  }
  std::lock_guard guard(mutex_);
  if (recording_ != nullptr) record(TraceKind::hint, object, static_cast<std::uint8_t>(hint));
  switch (hint) {
    case Hint::will_use: policy_->will_use(object); break;
    case Hint::will_read: policy_->will_read(object); break;
    case Hint::will_write: policy_->will_write(object); break;
    case Hint::archive: policy_->archive(object); break;
    case Hint::retire: break;  // handed over above
  }
}

CACHEDARRAYS_INLINE std::byte* Runtime::acquire_locked(Object& object, Access access, double& emulated_ns) {
  if (access == Access::read) policy_->will_read(object); else policy_->will_write(object);
  manager_.pin(object, access);
  emulated_ns += manager_.note_access(object, access);
  return manager_.pointer(*manager_.getprimary(object));
}

CACHEDARRAYS_INLINE std::uint64_t Runtime::acquire_all(Object* const* objects, const Access* accesses, std::byte** data,
                                                     std::size_t n, const char* kernel) {
  double emulated_ns = 0;
  std::uint64_t index = 0;
  {
    std::lock_guard guard(mutex_);
    std::size_t pinned = 0;
    try {
      // Hint and pin one argument at a time: once pinned, a later argument's
      // hint cannot evict it.
      for (; pinned < n; ++pinned) data[pinned] = acquire_locked(*objects[pinned], accesses[pinned], emulated_ns);
      index = kernel_index_;
      if (kernel_hooks_) {
        policy_->on_kernel_begin({iteration_, index, kernel, std::span(objects, n), std::span(accesses, n)});
      }
      ++kernel_index_;
    } catch (...) {
      while (pinned > 0) {
        --pinned;
        release(*objects[pinned], accesses[pinned]);
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
  return index;
}

CACHEDARRAYS_INLINE void Runtime::retire(Object& object) {
  std::lock_guard guard(mutex_);
  if (object.pinned()) {
    throw pinned_error("cachedarrays: cannot retire array #" + std::to_string(object.id()) +
                       " while a read()/write() access or kernel on it is open; end that scope first");
  }
  if (recording_ != nullptr) record(TraceKind::retire, object);
  policy_->retire(object);
}

CACHEDARRAYS_INLINE void Runtime::collect() {
  std::lock_guard guard(mutex_);
  if (recording_ != nullptr) recording_->record({.kind = TraceKind::collect});
  policy_->collect();
  manager_.poll_copies();
}

CACHEDARRAYS_INLINE Stats Runtime::stats() const {
  std::lock_guard guard(mutex_);
  return manager_.stats();
}

CACHEDARRAYS_INLINE std::vector<DeviceUsage> Runtime::usage() const {
  std::lock_guard guard(mutex_);
  return manager_.usage();
}

CACHEDARRAYS_INLINE std::string Runtime::policy_name() const { return policy_->name(); }

}  // namespace cachedarrays
