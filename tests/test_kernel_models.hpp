// Kernel time models for the policy tests (autotm_policy_tests.cpp,
// planned_policies_tests.cpp): times a hand can follow.
#pragma once

#include <span>
#include <string_view>

#include "cachedarrays/plan/program/roofline.hpp"

namespace test {

// Every kernel takes `base` seconds, plus a millisecond for every argument
// on the slow tier (its bandwidth below 50 GB/s here).
class MillisecondPerSlowArgument final : public cachedarrays::plan::KernelTimeModel {
 public:
  explicit MillisecondPerSlowArgument(double base) : base_(base) {}
  [[nodiscard]] double seconds(std::string_view, std::span<const cachedarrays::plan::ArgTraffic> args) const override {
    double s = base_;
    for (const auto& a : args) s += a.gbps < 50 ? 1e-3 : 0;
    return s;
  }

 private:
  double base_;
};

}  // namespace test
