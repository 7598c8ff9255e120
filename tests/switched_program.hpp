// A training step in miniature, for the tests that switch a running
// program's policy (policy_switch_tests.cpp, auto_policy_tests.cpp): its
// arrays' contents are checked at every use.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "test_support.hpp"

namespace test {

// A training step in miniature, its contents checked at every use:
// persistent weights, activations made by the forward kernels and archived
// until the backward ones read them and retire them, the weights rewritten
// there. A fast tier of a third of its footprint makes every caching policy
// move.
class SwitchedProgram {
 public:
  static constexpr int layers = 4;
  static constexpr std::uint64_t weight_bytes = 12 * test::KiB;
  static constexpr std::uint64_t activation_bytes = 20 * test::KiB;
  static constexpr std::uint64_t footprint = layers * weight_bytes + (layers + 1) * activation_bytes;

  explicit SwitchedProgram(ca::Runtime& rt) : rt_(rt) {
    for (int i = 0; i < layers; ++i) {
      weights_.push_back(rt_.array<std::byte>(weight_bytes));
      weight_seeds_.push_back(next_seed_++);
      test::fill(weights_.back(), weight_seeds_.back());
    }
  }

  void iteration() {
    rt_.begin_iteration();
    std::vector<ca::CachedArray<std::byte>> acts;
    std::vector<std::uint64_t> act_seeds;
    acts.push_back(rt_.array<std::byte>(activation_bytes));
    act_seeds.push_back(next_seed_++);
    test::fill(acts.back(), act_seeds.back());
    for (std::size_t i = 0; i < layers; ++i) {
      acts.push_back(rt_.array<std::byte>(activation_bytes));
      act_seeds.push_back(next_seed_++);
      rt_.kernel("forward", ca::reads(acts[i], weights_[i]), ca::writes(acts.back()),
                 [&](std::span<const std::byte> in, std::span<const std::byte> w, std::span<std::byte> out) {
                   REQUIRE(test::holds(in.data(), in.size(), act_seeds[i]));
                   REQUIRE(test::holds(w.data(), w.size(), weight_seeds_[i]));
                   test::fill(out.data(), out.size(), act_seeds.back());
                 });
      acts[i].archive();
    }
    for (std::size_t i = layers; i-- > 0;) {
      const std::uint64_t updated = next_seed_++;
      rt_.kernel("backward", ca::reads(acts[i + 1], acts[i]), ca::writes(weights_[i]),
                 [&](std::span<const std::byte> out, std::span<const std::byte> in, std::span<std::byte> w) {
                   REQUIRE(test::holds(out.data(), out.size(), act_seeds[i + 1]));
                   REQUIRE(test::holds(in.data(), in.size(), act_seeds[i]));
                   test::fill(w.data(), w.size(), updated);
                 });
      weight_seeds_[i] = updated;
      acts[i + 1].retire();
    }
    acts.front().retire();
  }

  // Every weight holds what was last written to it: read in an iteration
  // that is not the program's, so that a planner does not count the reads
  // as a departure from it.
  void check_weights() const {
    rt_.begin_unplanned_iteration();
    for (std::size_t i = 0; i < layers; ++i) {
      CAPTURE(i);
      CHECK(test::holds(weights_[i], weight_seeds_[i]));
    }
  }

  [[nodiscard]] const std::vector<ca::CachedArray<std::byte>>& weights() const { return weights_; }

 private:
  ca::Runtime& rt_;
  std::vector<ca::CachedArray<std::byte>> weights_;
  std::vector<std::uint64_t> weight_seeds_;
  std::uint64_t next_seed_ = 1;
};

}  // namespace test
