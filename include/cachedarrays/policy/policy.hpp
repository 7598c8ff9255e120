// The policy API (paper III-D): a policy decides *when and where* data moves,
// reacting to the application's hints, and acts only through the
// DataManager's API (never heap internals). Derive from Policy and override
// what your strategy needs; see examples/custom_policy.cpp and the README.
//
// Every handler runs under the runtime's lock, so a policy needs no locking
// of its own (read_hint_delivery and write_hint_delivery let a policy take
// some will_read and will_write hints later, so that accesses need not take
// the lock). Only a wrong retire can change a program's results: every other
// hint, whatever the policy does with it, only changes speed.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::policy {

/// A kernel at one of its boundaries (docs/design.md "What is known ahead"): its
/// position among the kernels of the current iteration (scoped read()/
/// write() accesses count as kernels), and its arguments, every one of them
/// already hinted and pinned.
struct KernelPoint {
  std::uint64_t iteration = 0;       ///< Runtime::begin_iteration calls so far (0: before the first)
  std::uint64_t index = 0;           ///< kernels begun in this iteration before this one
  std::string_view name;             ///< the kernel's name ("read()"/"write()" for scoped accesses)
  std::span<Object* const> objects;  ///< the kernel's arguments, in order (valid during the call only)
  std::span<const Access> accesses;  ///< how each argument is accessed, parallel to `objects`
};

/// The base of every placement policy: decides when and where data moves,
/// in reaction to the application's hints, acting only through the
/// DataManager's API. Every handler runs under the runtime's lock. Not
/// copyable.
class Policy {
 public:
  virtual ~Policy();
  Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  /// The name a registry and the stats show ("first-touch", "ca-lm", ...).
  [[nodiscard]] virtual std::string name() const = 0;

  /// Called once by the Runtime before any other handler; keeps `manager`
  /// for manager().
  virtual void attach(DataManager& manager) { manager_ = &manager; }

  /// A new object with no region yet: give it a primary (allocate a region
  /// and setprimary). Return false when no device can hold it; the runtime
  /// then destroys the object and throws out_of_memory.
  [[nodiscard]] virtual bool place(Object& object) = 0;
  /// An object another policy placed becomes this one's (Runtime::
  /// switch_policy, policy::hand_over): record it where it lies, moving
  /// nothing. Heard once per live object, in creation order, after attach
  /// and before any other handler; the object has a primary, no policy state
  /// (Object::policy_state) and no copy in flight, and may be pinned by a
  /// kernel still running. By default nothing: a policy that keeps state per
  /// object must give it here, as place() does.
  virtual void adopt(Object& /*object*/) {}

  /// Hint (paper Table II): `object` is about to be used. Ignored by default.
  virtual void will_use(Object& /*object*/) {}
  /// Hint: `object` is about to be read (before each scoped read access, for
  /// each argument a kernel only reads, or from the application). Defaults to
  /// will_use.
  virtual void will_read(Object& object) { will_use(object); }
  /// Hint: `object` is about to be written (before each scoped write access,
  /// for each argument a kernel writes, or from the application). Defaults to
  /// will_use.
  virtual void will_write(Object& object) { will_use(object); }
  /// Hint: `object` is not needed for a while. Ignored by default.
  virtual void archive(Object& /*object*/) {}
  /// Hint: `object` is never needed again. The default frees it at once; a
  /// policy may defer the free (to collect()), but must destroy the object
  /// eventually.
  virtual void retire(Object& object) { manager().destroy(object); }
  /// A point where deferred work may run: end of an iteration, or memory
  /// pressure detected.
  virtual void collect() {}

  /// The program of an iteration (plan/program/program.hpp), for policies that plan
  /// ahead: given by Runtime::set_program, or recorded by
  /// Runtime::record_program once the first iteration has run. It is shared,
  /// so a policy may keep it.
  virtual void on_program(std::shared_ptr<const plan::Program> /*program*/) {}
  /// The program given to on_program, now with the online profiles of its
  /// kernels (plan::Program::profiles), measured in the iterations after it
  /// came (Runtime::set_profile_iterations); heard at a begin_iteration,
  /// before on_iteration_begin. A policy that plans from kernel times may
  /// plan again from them. By default nothing happens.
  virtual void on_profiles(std::shared_ptr<const plan::Program> /*program*/) {}
  /// Program position, for policies that plan ahead: iteration `iteration`
  /// begins (Runtime::begin_iteration; the nn trainer calls it at every step).
  virtual void on_iteration_begin(std::uint64_t /*iteration*/) {}
  /// An iteration that is not the program's begins (Runtime::
  /// begin_unplanned_iteration: the nn trainer's test passes between
  /// epochs). A policy that follows the program places by its own fallback
  /// until the next on_iteration_begin, and does not count it as a departure
  /// from the program. By default, the same as on_iteration_begin.
  virtual void on_unplanned_iteration_begin(std::uint64_t iteration) { on_iteration_begin(iteration); }
  /// A kernel's arguments are hinted and pinned and it is about to run: the
  /// moment to start copies for the kernels after it (they cannot evict its
  /// arguments). Throwing fails the kernel, whose arguments are unpinned.
  virtual void on_kernel_begin(const KernelPoint& /*kernel*/) {}
  /// The kernel ran to its end (its arguments are still pinned). Scoped
  /// read()/write() accesses and kernels that threw have no end.
  virtual void on_kernel_end(const KernelPoint& /*kernel*/) {}
  /// Whether on_kernel_begin / on_kernel_end are wanted, asked when the
  /// runtime is made and again whenever answers_version() changes. A policy that does not follow the program position
  /// returns false, and every kernel is spared the two calls and a second
  /// lock of the runtime (hint_overhead's kernel rows). Kernels are counted
  /// either way.
  [[nodiscard]] virtual bool follows_kernels() const { return true; }
  /// How a will_read hint on `object`, where it is now, may reach this policy
  /// from a thread that does not hold the runtime's lock: under_lock (the
  /// default: every hint at once, under the lock), deferred (under the lock
  /// before the runtime's next locked call, repeated hints on the object
  /// arriving as one), or unneeded (the policy would do nothing with it).
  /// Asked under the lock after each hint the object gets there, and again
  /// after its primary moves. Reads of objects that need no lock are pinned
  /// without it, so threads reading their own arrays do not serialise on the
  /// lock. Only asked of a policy that does not follow kernels: a kernel's
  /// position is counted under the lock.
  [[nodiscard]] virtual HintDelivery read_hint_delivery(const Object& /*object*/) const {
    return HintDelivery::under_lock;
  }
  /// The same for a will_write hint on `object`, where it is now. A write
  /// skips the lock only where nothing else can observe the object's
  /// regions (its primary already dirty, every other region already stale,
  /// no copy in flight: DataManager::writable_unlocked), so deferring the
  /// hint is the policy's only concession. By default under_lock: a policy
  /// of a user's hears every write hint at once.
  [[nodiscard]] virtual HintDelivery write_hint_delivery(const Object& /*object*/) const {
    return HintDelivery::under_lock;
  }
  /// Whether the runtime should record the first iteration's program for it
  /// when the program gives none (Runtime::record_program at the first
  /// begin_iteration), so that it plans without the program asking. By
  /// default false: a program records or sets its own (Runtime::set_program).
  [[nodiscard]] virtual bool records_program() const { return false; }
  /// A number that changes whenever follows_kernels() or a hint delivery
  /// may answer differently than before (a policy that runs another inside
  /// it, and switches: policy/auto_policy.hpp). The runtime asks it after
  /// each on_iteration_begin, and asks the other two again when it changed.
  /// By default 0: the answers never change.
  [[nodiscard]] virtual std::uint64_t answers_version() const { return 0; }

 protected:
  /// The data manager given to attach(); only valid once attached.
  [[nodiscard]] DataManager& manager() const { return *manager_; }
  /// Whether attach() has been called.
  [[nodiscard]] bool attached() const noexcept { return manager_ != nullptr; }

 private:
  DataManager* manager_ = nullptr;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/policy-inl.hpp"
#endif
