// A policy for the tests of accesses that skip the runtime's lock
// (unlocked_reads_tests.cpp, unlocked_writes_tests.cpp): it places every
// object on the fast device, records the hints it hears, and answers the
// given deliveries for objects in fast memory, under_lock elsewhere.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"

namespace test {

class ListeningPolicy final : public cachedarrays::policy::Policy {
 public:
  ListeningPolicy(cachedarrays::HintDelivery reads, cachedarrays::HintDelivery writes)
      : reads_(reads), writes_(writes) {}

  std::vector<std::string> heard;  // "will_read #id", "will_write #id", "collect"
  int asked = 0;                   // read_hint_delivery calls

  [[nodiscard]] std::string name() const override { return "test-listening"; }
  [[nodiscard]] bool follows_kernels() const override { return false; }
  [[nodiscard]] bool place(cachedarrays::Object& object) override {
    cachedarrays::Region* r = manager().allocate(0, object.bytes());
    if (r == nullptr) return false;
    manager().setprimary(object, *r);
    return true;
  }
  void will_read(cachedarrays::Object& object) override {
    heard.push_back("will_read #" + std::to_string(object.id()));
  }
  void will_write(cachedarrays::Object& object) override {
    heard.push_back("will_write #" + std::to_string(object.id()));
  }
  void collect() override { heard.push_back("collect"); }
  [[nodiscard]] cachedarrays::HintDelivery read_hint_delivery(const cachedarrays::Object& object) const override {
    ++const_cast<ListeningPolicy*>(this)->asked;
    return in_fast(object) ? reads_ : cachedarrays::HintDelivery::under_lock;
  }
  [[nodiscard]] cachedarrays::HintDelivery write_hint_delivery(const cachedarrays::Object& object) const override {
    return in_fast(object) ? writes_ : cachedarrays::HintDelivery::under_lock;
  }

 private:
  [[nodiscard]] bool in_fast(const cachedarrays::Object& object) const {
    return manager().device(*manager().getprimary(object)) == 0;
  }
  cachedarrays::HintDelivery reads_;
  cachedarrays::HintDelivery writes_;
};

// A runtime of two tiers under a ListeningPolicy.
struct Listening {
  ListeningPolicy* policy;
  cachedarrays::Runtime rt;
  Listening(cachedarrays::HintDelivery reads, cachedarrays::HintDelivery writes)
      : Listening(std::make_unique<ListeningPolicy>(reads, writes)) {}

 private:
  explicit Listening(std::unique_ptr<ListeningPolicy> p) : policy(p.get()), rt(two_tiers(), std::move(p)) {}
};

// What the policy hears of a read or a write of `a`.
inline std::string read_of(const cachedarrays::CachedArray<float>& a) { return "will_read #" + std::to_string(a.id()); }
inline std::string write_of(const cachedarrays::CachedArray<float>& a) {
  return "will_write #" + std::to_string(a.id());
}

}  // namespace test
