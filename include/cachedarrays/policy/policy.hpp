// The policy API (paper III-D): a policy decides *when and where* data moves,
// reacting to the application's hints, and acts only through the
// DataManager's API (never heap internals). Derive from Policy and override
// what your strategy needs; see examples/custom_policy.cpp and the README.
//
// Every handler runs under the runtime's lock, so a policy needs no locking
// of its own. Only a wrong retire can change a program's results: every other
// hint, whatever the policy does with it, only changes speed.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>

#include "cachedarrays/manager/data_manager.hpp"

namespace cachedarrays::policy {

class Policy {
 public:
  virtual ~Policy();
  Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // The name a registry and the stats show ("first-touch", "ca-lm", ...).
  [[nodiscard]] virtual std::string name() const = 0;

  // Called once by the Runtime before any other handler.
  virtual void attach(DataManager& manager) { manager_ = &manager; }

  // A new object with no region yet: give it a primary (allocate a region
  // and setprimary). Return false when no device can hold it; the runtime
  // then destroys the object and throws out_of_memory.
  [[nodiscard]] virtual bool place(Object& object) = 0;

  // Hints (paper Table II). `will_read`/`will_write` come before each
  // scoped access and each kernel; their default is will_use.
  virtual void will_use(Object& /*object*/) {}
  virtual void will_read(Object& object) { will_use(object); }
  virtual void will_write(Object& object) { will_use(object); }
  // Not needed for a while.
  virtual void archive(Object& /*object*/) {}
  // Never needed again. The default frees it at once; a policy may defer
  // the free (to collect()), but must destroy the object eventually.
  virtual void retire(Object& object) { manager().destroy(object); }
  // A point where deferred work may run: end of an iteration, or memory
  // pressure detected.
  virtual void collect() {}

 protected:
  [[nodiscard]] DataManager& manager() const { return *manager_; }
  [[nodiscard]] bool attached() const noexcept { return manager_ != nullptr; }

 private:
  DataManager* manager_ = nullptr;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/policy-inl.hpp"
#endif
