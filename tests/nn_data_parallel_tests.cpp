// Data-parallel training (nn/data_parallel.hpp, nn/gradient_buckets.hpp)
// without MPI: a "mirror" communicator plays a world of two ranks whose
// other rank computed exactly what this one did, so that a sum is twice
// the value and the average the value itself (both exact in floating
// point). A data-parallel trainer over it must then train bit for bit as a
// single process on the same shard: that checks the bucket plan, the
// packing and unpacking kernels, the running-statistics averaging and the
// loss, on whatever tier each gradient lies. The MPI runs themselves (2
// real ranks) are tests/mpi/.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/data_parallel.hpp"
#include "cachedarrays/nn/fit.hpp"
#include "cachedarrays/nn/gradient_buckets.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "nn_test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

// Two ranks, the other always equal to this one: sums double, broadcasts
// keep what is there. Records what was asked of it.
class MirrorCommunicator final : public nn::Communicator {
 public:
  explicit MirrorCommunicator(int rank = 0) : rank_(rank) {}
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return 2; }
  Request start_sum(std::span<float> data, const std::string& what) override {
    for (float& x : data) x += x;
    started.push_back(what);
    kernels_at_start.push_back(kernels_seen);
    return ++requests;
  }
  Request start_sum(std::span<double> data, const std::string& what) override {
    if (what == stop_requests) {
      // Each rank's answer at its place: the other rank's is other_rank_stop.
      data[static_cast<std::size_t>(1 - rank_)] = other_rank_stop;
    } else {
      for (double& x : data) x += x;
    }
    started.push_back(what);
    kernels_at_start.push_back(kernels_seen);
    return ++requests;
  }
  void progress() override { ++progress_calls; }
  void wait(Request request) override {
    CHECK(request <= requests);
    ++waits;
  }
  void broadcast(std::span<std::byte> data, int root, const std::string& what) override {
    broadcasts.push_back(what);
    broadcast_bytes += data.size();
    CHECK(root == 0);
  }
  [[noreturn]] void abort(const std::string& message) override { throw ca::error("abort: " + message); }

  static constexpr const char* stop_requests = "the ranks' stop requests";
  double other_rank_stop = 0;  // what the other rank's FitOptions::stop_requested answers
  std::vector<std::string> started;
  std::vector<std::uint64_t> kernels_at_start;  // kernels run before each sum started
  std::vector<std::string> broadcasts;
  std::uint64_t broadcast_bytes = 0;
  std::uint64_t kernels_seen = 0;
  Request requests = 0;
  int waits = 0;
  int progress_calls = 0;

 private:
  int rank_;
};

// Counts the kernels a context runs (into the mirror, to place each sum's start).
struct KernelCounter final : nn::KernelObserver {
  explicit KernelCounter(std::uint64_t& count) : count_(count) {}
  void on_kernel(const std::string& signature, std::span<const nn::KernelArg>) override {
    ++count_;
    signatures.push_back(signature);
  }
  std::vector<std::string> signatures;

 private:
  std::uint64_t& count_;
};

nn::ModelConfig vgg() {
  return {.family = "vgg", .depth = 11, .batch = 4, .image_size = 32, .classes = 10, .width = 0.125};
}
nn::ModelConfig resnet() {
  return {.family = "resnet", .depth = 18, .batch = 4, .image_size = 32, .classes = 10, .width = 0.125};
}

void random_batch(std::uint64_t seed, const nn::ModelConfig& m, std::vector<float>& images,
                  std::vector<float>& labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  images.resize(static_cast<std::size_t>(m.batch * m.channels * m.image_size * m.image_size));
  labels.resize(static_cast<std::size_t>(m.batch));
  for (float& x : images) x = d(rng);
  for (float& y : labels) y = static_cast<float>(rng() % static_cast<std::uint64_t>(m.classes));
}

// A runtime whose fast tier holds `fraction` of the model's footprint, so
// that gradients and buckets also live on (and move from) the slow tier.
ca::Runtime runtime_for(const nn::ModelConfig& m, double fraction, const nn::TrainerOptions& options = {}) {
  const auto build = [&] { return nn::build_model(m); };
  const std::uint64_t footprint = nn::measure_footprint(build, options);
  const auto fast_bytes = static_cast<std::uint64_t>(fraction * static_cast<double>(footprint));
  return ca::Runtime(
      {ca::dram(std::max<std::uint64_t>(fast_bytes, 1 << 16), "fast"), ca::dax_file({}, 3 * footprint, "slow")},
      ca::policy::Registry::builtin().make("ca-lm"));
}

// A data-parallel trainer over a mirror, with buckets of `bucket_bytes`,
// on tiers whose fast one holds `fraction` of the footprint.
struct MirroredTrainer {
  MirroredTrainer(const nn::ModelConfig& m, std::uint64_t bucket_bytes, double fraction = 2.0)
      : options(with_mirror(mirror, bucket_bytes)),
        runtime(runtime_for(m, fraction, options)),
        trainer(&runtime, nn::build_model(m), options) {}
  static nn::TrainerOptions with_mirror(MirrorCommunicator& mirror, std::uint64_t bucket_bytes) {
    nn::TrainerOptions options;
    options.data_parallel.communicator = &mirror;
    options.data_parallel.bucket_bytes = bucket_bytes;
    return options;
  }
  MirrorCommunicator mirror;
  nn::TrainerOptions options;
  ca::Runtime runtime;
  nn::Trainer trainer;
};

void check_same_state(nn::Trainer& a, nn::Trainer& b) {
  const std::vector<nn::CheckpointTensor> sa = a.state();
  const std::vector<nn::CheckpointTensor> sb = b.state();
  REQUIRE(sa.size() == sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CAPTURE(sa[i].name);
    REQUIRE(sa[i].values.size() == sb[i].values.size());
    CHECK(std::memcmp(sa[i].values.data(), sb[i].values.data(), sa[i].values.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("data parallel: a global batch splits evenly over the ranks or is refused with what would split") {
  CHECK(nn::shard_batch(8, 2) == 4);
  CHECK(nn::shard_batch(8, 1) == 8);
  CHECK(nn::shard_batch(24, 8) == 3);
  const std::string uneven = test::invalid_argument_message([] { (void)nn::shard_batch(9, 2); });
  test::check_contains(uneven, "global batch of 9 samples does not split evenly over 2 ranks");
  test::check_contains(uneven, "8 or 10");
  test::check_contains(test::invalid_argument_message([] { (void)nn::shard_batch(1, 2); }), "use a multiple of 2 (2)");
  test::check_contains(test::invalid_argument_message([] { (void)nn::shard_batch(8, 0); }), "at least 1");
}

TEST_CASE("data parallel: with every rank equal, training is bit for bit the single process's, on both tiers") {
  for (const nn::ModelConfig& m : {vgg(), resnet()}) {
    CAPTURE(m.family);
    for (const double fraction : {2.0, 0.3}) {
      CAPTURE(fraction);
      ca::Runtime rt_one = runtime_for(m, fraction);
      nn::Trainer one(&rt_one, nn::build_model(m));
      MirroredTrainer dp(m, 16 << 10, fraction);  // several buckets
      MirrorCommunicator& mirror = dp.mirror;
      ca::Runtime& rt_dp = dp.runtime;
      nn::Trainer& parallel = dp.trainer;
      REQUIRE(parallel.gradient_buckets() != nullptr);
      CHECK(parallel.gradient_buckets()->bucket_count() > 2);
      CHECK(one.gradient_buckets() == nullptr);
      // The start broadcasts every parameter, its momentum and the buffers.
      CHECK(mirror.broadcasts.size() >= 2 * nn::build_model(m).values_with_role(nn::ValueRole::parameter).size());
      std::vector<float> images;
      std::vector<float> labels;
      for (int step = 0; step < 3; ++step) {
        random_batch(100 + static_cast<std::uint64_t>(step), m, images, labels);
        const float a = one.step(images, labels);
        rt_one.collect();
        const float b = parallel.step(images, labels);
        rt_dp.collect();
        CHECK(std::memcmp(&a, &b, sizeof a) == 0);
      }
      check_same_state(one, parallel);
      // Every bucket and the loss with the running statistics, each step.
      const auto& c = parallel.gradient_buckets()->counters();
      CHECK(c.steps == 3);
      CHECK(c.buckets == 3 * parallel.gradient_buckets()->bucket_count());
      CHECK(mirror.started.size() == c.buckets + 3);
      CHECK(mirror.waits == static_cast<int>(mirror.started.size()));
      CHECK(mirror.progress_calls > 0);
      rt_dp.manager().check_invariants(true);
      if (fraction < 1)
        CHECK(rt_dp.stats().bytes_copied[0][1] > 0);  // gradients and buckets went through the slow tier
    }
  }
}

TEST_CASE("data parallel: buckets hold every parameter once, in the order the backward pass finishes them") {
  MirroredTrainer dp(resnet(), 32 << 10);
  const nn::Trainer& trainer = dp.trainer;
  const nn::GradientBuckets& buckets = *trainer.gradient_buckets();
  const nn::Graph& g = trainer.graph();
  std::vector<nn::ValueId> order;
  for (std::size_t i = 0; i < buckets.bucket_count(); ++i) {
    std::uint64_t bytes = 0;
    const std::vector<nn::ValueId> members = buckets.bucket_members(i);
    REQUIRE_FALSE(members.empty());
    for (nn::ValueId p : members)
      bytes += static_cast<std::uint64_t>(nn::element_count(g.value(p).dims)) * sizeof(float);
    CAPTURE(i);
    CHECK((bytes <= dp.options.data_parallel.bucket_bytes || members.size() == 1));
    order.insert(order.end(), members.begin(), members.end());
  }
  std::vector<nn::ValueId> parameters = g.values_with_role(nn::ValueRole::parameter);
  CHECK(order.size() == parameters.size());
  CHECK(std::set<nn::ValueId>(order.begin(), order.end()) ==
        std::set<nn::ValueId>(parameters.begin(), parameters.end()));
  // Backward order: the first consumer's node index never increases.
  int previous = static_cast<int>(g.nodes().size());
  for (nn::ValueId p : order) {
    const auto& consumers = g.value(p).consumers;
    const int first = *std::min_element(consumers.begin(), consumers.end());
    CHECK(first <= previous);
    previous = first;
  }
}

TEST_CASE("data parallel: the gradient sums start while the backward pass still has kernels to run") {
  const nn::ModelConfig m = vgg();
  MirroredTrainer dp(m, 16 << 10);
  MirrorCommunicator& mirror = dp.mirror;
  nn::Trainer& trainer = dp.trainer;
  KernelCounter counter(mirror.kernels_seen);
  trainer.context().set_observer(&counter);
  std::vector<float> images;
  std::vector<float> labels;
  random_batch(7, m, images, labels);
  mirror.started.clear();
  mirror.kernels_at_start.clear();
  (void)trainer.step(images, labels);
  trainer.context().set_observer(nullptr);
  const std::uint64_t total = mirror.kernels_seen;
  // The first sum (the loss and statistics) starts after the forward pass;
  // the first gradient bucket long before the step's last kernel.
  REQUIRE(mirror.started.size() >= 3);
  CHECK(mirror.started[0] == "the loss and running statistics");
  test::check_contains(mirror.started[1], "gradient bucket 1 of ");
  const std::uint64_t first_bucket = mirror.kernels_at_start[1];
  std::uint64_t backward_after = 0;
  for (std::size_t k = first_bucket; k < counter.signatures.size(); ++k) {
    if (counter.signatures[k].find("backward") != std::string::npos) ++backward_after;
  }
  CAPTURE(first_bucket);
  CAPTURE(total);
  CHECK(backward_after >= 5);  // VGG-11 has 8 convolutions and 3 linear layers before its last buckets
  // Packing and unpacking are kernels of their own, one per bucket.
  const auto kernels_named = [&](const std::string& name) {
    return std::count_if(counter.signatures.begin(), counter.signatures.end(),
                         [&](const std::string& s) { return s.rfind(name + " ", 0) == 0; });
  };
  CHECK(static_cast<std::size_t>(kernels_named("allreduce_pack")) == trainer.gradient_buckets()->bucket_count());
  CHECK(static_cast<std::size_t>(kernels_named("allreduce_unpack")) == trainer.gradient_buckets()->bucket_count());
}

TEST_CASE("data parallel: the dry-run program has the bucket kernels, so planning policies see them") {
  const nn::ModelConfig m = vgg();
  MirrorCommunicator mirror;
  nn::TrainerOptions dp;
  dp.data_parallel.communicator = &mirror;
  const auto build = [&] { return nn::build_model(m); };
  const ca::plan::Program single = nn::dry_run_program(build);
  const ca::plan::Program parallel = nn::dry_run_program(build, dp);
  const auto has = [](const ca::plan::Program& p, const std::string& name) {
    return std::any_of(p.kernels().begin(), p.kernels().end(),
                       [&](const ca::plan::ProgramKernel& k) { return k.name.rfind(name, 0) == 0; });
  };
  CHECK_FALSE(has(single, "allreduce_pack"));
  CHECK(has(parallel, "allreduce_pack"));
  CHECK(has(parallel, "allreduce_unpack"));
  // A dry run sends nothing.
  CHECK(mirror.started.empty());
}

TEST_CASE("data parallel: bad settings are refused with what is allowed") {
  const nn::ModelConfig m = vgg();
  MirrorCommunicator mirror;
  nn::TrainerOptions dp;
  dp.data_parallel.communicator = &mirror;
  dp.data_parallel.bucket_bytes = 0;
  ca::Runtime rt = runtime_for(m, 2.0);
  test::check_contains(test::invalid_argument_message([&] { nn::Trainer t(&rt, nn::build_model(m), dp); }),
                       "gradient buckets of 0 bytes");
  dp.data_parallel.bucket_bytes = 1 << 20;
  nn::Trainer trainer(&rt, nn::build_model(m), dp);
  test::check_contains(test::invalid_argument_message([&] { trainer.broadcast_state(2); }),
                       "broadcast_state from rank 2 of 2");
  // fit: the batch is the global one, the graph's times the ranks.
  const nn::DataSplits data = nn::open_data("synthetic", {3, 32, 32}, 10, 1);
  nn::FitOptions fit;
  fit.train.batch = m.batch;
  fit.max_iterations = 1;
  fit.train.limit = 16;
  test::check_contains(test::invalid_argument_message([&] { (void)nn::fit(trainer, *data.train, nullptr, fit); }),
                       "built for batches of 4 on each of 2 ranks (8 in all)");
  fit.train.batch = 2 * m.batch;
  const nn::FitResult r = nn::fit(trainer, *data.train, nullptr, fit);
  CHECK(r.iterations == 1);
}

TEST_CASE("data parallel: a stop asked on the other rank stops this one at the same step, with its reason") {
  const nn::ModelConfig m = vgg();
  MirroredTrainer t(m, 1 << 20);
  const nn::DataSplits data = nn::open_data("synthetic", {3, 32, 32}, 10, 1);
  nn::FitOptions fit;
  fit.train.batch = 2 * m.batch;
  fit.train.limit = 8 * fit.train.batch;
  fit.stop_requested = [] { return 0; };  // this rank is never asked
  int steps = 0;
  fit.after_step = [&](const nn::FitStep&) {
    if (++steps == 3) t.mirror.other_rank_stop = SIGTERM;
  };
  const nn::FitResult r = nn::fit(t.trainer, *data.train, nullptr, fit);
  CHECK(r.iterations == 3);
  CHECK(r.stop_reason == SIGTERM);
  CHECK(r.batches_done == 3);
  CHECK(std::count(t.mirror.started.begin(), t.mirror.started.end(), MirrorCommunicator::stop_requests) == 4);
}
