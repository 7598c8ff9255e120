#include "cachedarrays/runtime.hpp"

#include "cachedarrays/emulation.hpp"
#include "cachedarrays/policy/first_touch.hpp"

namespace cachedarrays {

Runtime::Runtime(std::vector<DeviceSpec> devices, std::unique_ptr<policy::Policy> policy)
    : manager_(std::move(devices)),
      policy_(policy != nullptr ? std::move(policy) : std::make_unique<policy::FirstTouch>()) {
  policy_->attach(manager_);
}

// Members go in reverse order: the policy (which may own per-object state)
// before the manager, which frees whatever objects are still alive.
Runtime::~Runtime() = default;

Object& Runtime::create_object(std::uint64_t bytes) {
  std::lock_guard guard(mutex_);
  Object& object = manager_.create_object(bytes);
  bool placed = false;
  try {
    placed = policy_->place(object);
  } catch (...) {
    manager_.destroy(object);
    throw;
  }
  if (!placed) {
    // Snapshot the usage before destroying: the message shows what the
    // policy saw. Nothing else changes: every other object stays intact.
    std::vector<DeviceUsage> devices = manager_.usage();
    manager_.destroy(object);
    throw out_of_memory(bytes, std::move(devices));
  }
  return object;
}

void Runtime::hint(Object& object, Hint hint) {
  std::lock_guard guard(mutex_);
  switch (hint) {
    case Hint::will_use: policy_->will_use(object); break;
    case Hint::will_read: policy_->will_read(object); break;
    case Hint::will_write: policy_->will_write(object); break;
    case Hint::archive: policy_->archive(object); break;
  }
}

std::byte* Runtime::acquire_locked(Object& object, Access access, double& emulated_ns) {
  if (access == Access::read) policy_->will_read(object); else policy_->will_write(object);
  manager_.pin(object, access);
  emulated_ns += manager_.note_access(object, access);
  return manager_.pointer(*manager_.getprimary(object));
}

std::byte* Runtime::acquire(Object& object, Access access) {
  double emulated_ns = 0;
  std::byte* data = nullptr;
  {
    std::lock_guard guard(mutex_);
    data = acquire_locked(object, access, emulated_ns);
  }
  // Charged outside the lock: other threads' hints need not wait for it.
  emulation::wait_ns(emulated_ns);
  return data;
}

void Runtime::acquire_all(Object* const* objects, const Access* accesses, std::byte** data, std::size_t n) {
  double emulated_ns = 0;
  {
    std::lock_guard guard(mutex_);
    std::size_t pinned = 0;
    try {
      // Hint and pin one argument at a time: once pinned, a later argument's
      // hint cannot evict it.
      for (; pinned < n; ++pinned) data[pinned] = acquire_locked(*objects[pinned], accesses[pinned], emulated_ns);
    } catch (...) {
      while (pinned > 0) {
        --pinned;
        release(*objects[pinned], accesses[pinned]);
      }
      throw;
    }
  }
  emulation::wait_ns(emulated_ns);
}

void Runtime::retire(Object& object) {
  std::lock_guard guard(mutex_);
  if (object.pinned()) {
    throw pinned_error("cachedarrays: cannot retire array #" + std::to_string(object.id()) +
                       " while a read()/write() access or kernel on it is open; end that scope first");
  }
  policy_->retire(object);
}

void Runtime::collect() {
  std::lock_guard guard(mutex_);
  policy_->collect();
}

Stats Runtime::stats() const {
  std::lock_guard guard(mutex_);
  return manager_.stats();
}

std::vector<DeviceUsage> Runtime::usage() const {
  std::lock_guard guard(mutex_);
  return manager_.usage();
}

std::string Runtime::policy_name() const { return policy_->name(); }

}  // namespace cachedarrays
