// The AdamW optimizer of the trainer: its arithmetic against a hand
// computation, its decay rule, its state in checkpoints, the hints on its
// moments, and the warm-up + cosine schedule it is trained with.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/lr_schedule.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "nn_test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

constexpr std::int64_t batch_size = 6;
constexpr std::int64_t feature_count = 5;
constexpr std::int64_t class_count = 3;

// x [batch, features] -> linear (weight and bias) -> softmax cross-entropy.
nn::Graph linear_classifier() {
  nn::Graph g;
  const auto x = g.input("images", {batch_size, feature_count});
  const auto y = g.label("labels", {batch_size});
  g.set_loss(nn::softmax_cross_entropy(g, "loss", nn::linear(g, "fc", x, class_count), y));
  return g;
}

ca::Runtime make_adamw_runtime() {
  return ca::Runtime({ca::dram(4 << 20, "fast"), ca::dax_file({}, 16 << 20, "slow")},
                     ca::policy::Registry::builtin().make("ca-lm"));
}

nn::TrainerOptions adamw(float learning_rate, float weight_decay) {
  nn::TrainerOptions o;
  o.optimizer = nn::Optimizer::adamw;
  o.adamw.learning_rate = learning_rate;
  o.adamw.weight_decay = weight_decay;
  return o;
}

void make_adamw_batch(std::uint64_t seed, std::vector<float>& images, std::vector<float>& labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  images.resize(static_cast<std::size_t>(batch_size * feature_count));
  labels.resize(static_cast<std::size_t>(batch_size));
  for (float& v : images) v = normal(rng);
  for (float& v : labels) v = static_cast<float>(rng() % class_count);
}

// dLoss/dW and dLoss/db of mean softmax cross-entropy of x W^T + b, in double.
void gradients(const std::vector<double>& w, const std::vector<double>& b, const std::vector<float>& x,
               const std::vector<float>& labels, std::vector<double>& gw, std::vector<double>& gb) {
  gw.assign(w.size(), 0.0);
  gb.assign(b.size(), 0.0);
  for (std::int64_t n = 0; n < batch_size; ++n) {
    std::vector<double> z(class_count);
    for (std::int64_t c = 0; c < class_count; ++c) {
      z[c] = b[c];
      for (std::int64_t f = 0; f < feature_count; ++f) z[c] += w[c * feature_count + f] * x[n * feature_count + f];
    }
    const double top = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double& v : z) sum += (v = std::exp(v - top));
    for (std::int64_t c = 0; c < class_count; ++c) {
      const double d = (z[c] / sum - (c == static_cast<std::int64_t>(labels[n]) ? 1.0 : 0.0)) / batch_size;
      gb[c] += d;
      for (std::int64_t f = 0; f < feature_count; ++f) gw[c * feature_count + f] += d * x[n * feature_count + f];
    }
  }
}

// One AdamW step of Loshchilov & Hutter's algorithm 2 as torch.optim.AdamW
// writes it, in double.
void adamw_step(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v, const std::vector<double>& g,
                int t, double lr, double decay) {
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1 - lr * decay;
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const double m_hat = m[i] / (1 - std::pow(b1, t));
    const double v_hat = v[i] / (1 - std::pow(b2, t));
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("nn adamw: three steps match a hand computation, the weight decayed and the bias not") {
  const float lr = 0.05f;
  const float decay = 0.1f;
  auto rt = make_adamw_runtime();
  nn::Trainer trainer(&rt, linear_classifier(), adamw(lr, decay));
  std::vector<double> w = as_double(trainer.parameter("fc.weight"));
  std::vector<double> b = as_double(trainer.parameter("fc.bias"));
  std::vector<double> mw(w.size(), 0), vw(w.size(), 0), mb(b.size(), 0), vb(b.size(), 0);
  std::vector<float> images, labels;
  for (int t = 1; t <= 3; ++t) {
    CAPTURE(t);
    make_adamw_batch(static_cast<std::uint64_t>(t), images, labels);
    std::vector<double> gw, gb;
    gradients(w, b, images, labels, gw, gb);
    adamw_step(w, mw, vw, gw, t, lr, decay);
    adamw_step(b, mb, vb, gb, t, lr, 0.0);  // rank 1: no decay
    (void)trainer.step(images, labels);
    CHECK(trainer.optimizer_steps() == t);
    const std::vector<float> got_w = trainer.parameter("fc.weight");
    const std::vector<float> got_b = trainer.parameter("fc.bias");
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(got_w[i] == doctest::Approx(w[i]).epsilon(1e-5));
    for (std::size_t i = 0; i < b.size(); ++i) CHECK(got_b[i] == doctest::Approx(b[i]).epsilon(1e-5));
  }
  // The moments are the trainer's state, under PyTorch's names.
  bool found = false;
  for (const nn::CheckpointTensor& s : trainer.state()) {
    if (s.name != "fc.weight.exp_avg_sq") continue;
    found = true;
    for (std::size_t i = 0; i < vw.size(); ++i) CHECK(s.values[i] == doctest::Approx(vw[i]).epsilon(1e-4));
  }
  CHECK(found);
}

TEST_CASE("nn adamw: the decay rule — weights decay, biases and excluded parameters do not") {
  nn::Graph g = linear_classifier();
  CHECK(g.value(g.values_with_role(nn::ValueRole::parameter)[0]).weight_decay);   // fc.weight
  CHECK(!g.value(g.values_with_role(nn::ValueRole::parameter)[1]).weight_decay);  // fc.bias
  const nn::ValueId weight = g.values_with_role(nn::ValueRole::parameter)[0];
  g.exclude_from_weight_decay(weight);
  CHECK(!g.value(weight).weight_decay);
  test::check_contains(test::invalid_argument_message([&] { g.exclude_from_weight_decay(g.loss()); }),
                       "is not a parameter");
  // The decay is lr * weight_decay: at learning rate 0 the weights stay.
  auto rt = make_adamw_runtime();
  nn::Trainer trainer(&rt, linear_classifier(), adamw(0.0f, 0.5f));
  const std::vector<float> before = trainer.parameter("fc.weight");
  std::vector<float> images, labels;
  make_adamw_batch(3, images, labels);
  (void)trainer.step(images, labels);
  CHECK(trainer.parameter("fc.weight") == before);  // lr 0: neither step nor decay
}

TEST_CASE("nn adamw: a state loaded into a fresh trainer continues training bit for bit, moments and step included") {
  std::vector<float> images, labels;
  auto rt_a = make_adamw_runtime();
  nn::Trainer a(&rt_a, linear_classifier(), adamw(0.01f, 0.05f));
  for (int i = 0; i < 3; ++i) {
    make_adamw_batch(10 + static_cast<std::uint64_t>(i), images, labels);
    (void)a.step(images, labels);
  }
  const auto saved = a.state();
  std::set<std::string> names;
  for (const auto& t : saved) names.insert(t.name);
  CHECK(names == std::set<std::string>{"fc.weight", "fc.weight.exp_avg", "fc.weight.exp_avg_sq", "fc.bias",
                                       "fc.bias.exp_avg", "fc.bias.exp_avg_sq", "optimizer.step"});
  auto rt_b = make_adamw_runtime();
  nn::TrainerOptions other = adamw(0.01f, 0.05f);
  other.seed = 99;
  nn::Trainer b(&rt_b, linear_classifier(), other);
  b.load_state(saved);
  CHECK(b.optimizer_steps() == 3);
  make_adamw_batch(20, images, labels);
  const float la = a.step(images, labels);
  const float lb = b.step(images, labels);
  CHECK(std::memcmp(&la, &lb, sizeof la) == 0);
  CHECK(a.parameter("fc.weight") == b.parameter("fc.weight"));

  // An SGD checkpoint is not an AdamW state, and a bad step count is refused.
  auto rt_c = make_adamw_runtime();
  nn::Trainer sgd(&rt_c, linear_classifier());
  test::check_contains(test::invalid_argument_message([&] { b.load_state(sgd.state()); }),
                       "the state is another optimizer's: it has 'fc.weight.momentum', SGD's momentum, and this "
                       "trainer trains with adamw");
  test::check_contains(test::invalid_argument_message([&] { sgd.load_state(saved); }),
                       "an AdamW moment, and this trainer trains with sgd");
  auto bad = saved;
  bad.back().values = {2.5f};
  test::check_contains(test::invalid_argument_message([&] { b.load_state(bad); }), "'optimizer.step' is 2.5");
}

TEST_CASE("nn adamw: each parameter's moments are archived right after its update, and counted where they lie") {
  auto rt = make_adamw_runtime();
  const ca::Trace& trace = rt.start_trace();
  nn::Trainer trainer(&rt, linear_classifier(), adamw(0.01f, 0.05f));
  std::vector<float> images, labels;
  make_adamw_batch(1, images, labels);
  (void)trainer.step(images, labels);
  (void)trainer.step(images, labels);
  const auto& events = trace.events();
  int updates = 0;
  for (std::size_t e = 0; e < events.size(); ++e) {
    if (events[e].kind != ca::TraceKind::kernel_begin) continue;
    if (ca::plan::kernel_kind(trace.names()[events[e].name]) != "adamw") continue;
    ++updates;
    // Arguments: the gradient, the weight, then the two moments.
    REQUIRE(events[e].arg_count == 4);
    for (std::uint32_t a = 2; a < 4; ++a) {
      const std::uint64_t moment = trace.args()[events[e].arg_begin + a].object;
      // The next hint on the moment after this kernel is an archive.
      bool archived = false;
      for (std::size_t f = e + 1; f < events.size(); ++f) {
        if (events[f].kind == ca::TraceKind::hint && events[f].object == moment) {
          archived = events[f].detail == static_cast<std::uint8_t>(ca::Hint::archive);
          break;
        }
      }
      CHECK(archived);
    }
  }
  CHECK(updates == 4);  // weight and bias, two steps
  const auto& traffic = trainer.optimizer_state_traffic();
  CHECK(traffic.steps == 2);
  std::uint64_t total = 0;
  for (std::uint64_t b : traffic.bytes_by_device) total += b;
  CHECK(total == 2 * 2 * (class_count * feature_count + class_count) * sizeof(float));  // two moments, two steps
}

TEST_CASE("nn adamw: the optimizer's names, and warm-up then cosine") {
  CHECK(nn::parse_optimizer("adamw") == nn::Optimizer::adamw);
  CHECK(nn::parse_optimizer("sgd") == nn::Optimizer::sgd);
  CHECK(nn::optimizer_name(nn::Optimizer::adamw) == "adamw");
  test::check_contains(test::invalid_argument_message([] { (void)nn::parse_optimizer("adam"); }),
                       "unknown optimizer \"adam\"; use sgd or adamw");

  // 2 warm-up epochs of 10 batches in a run of 6 epochs: (s + 1) / 20 of the
  // rate, then a cosine over the other 40 steps.
  const auto s = nn::LearningRateSchedule::parse("warmup-cosine:2", 0.4f);
  CHECK(s.kind() == nn::LearningRateSchedule::Kind::warmup_cosine);
  CHECK(s.at(0, 0, 10, 6) == doctest::Approx(0.4 / 20));
  CHECK(s.at(1, 9, 10, 6) == doctest::Approx(0.4));
  CHECK(s.at(2, 0, 10, 6) == doctest::Approx(0.4));
  CHECK(s.at(4, 0, 10, 6) == doctest::Approx(0.2));  // half way through the cosine
  CHECK(s.at(5, 9, 10, 6) == doctest::Approx(0.2 * (1 + std::cos(M_PI * 39 / 40))));
  CHECK(s.describe() == "linear warm-up to 0.4 over 2 epochs, then cosine to 0");
  // No warm-up is the cosine.
  const auto none = nn::LearningRateSchedule::parse("warmup-cosine:0", 0.4f);
  const auto cosine = nn::LearningRateSchedule::parse("cosine", 0.4f);
  CHECK(none.at(1, 3, 10, 6) == cosine.at(1, 3, 10, 6));
  for (const char* bad : {"warmup-cosine:", "warmup-cosine:-1", "warmup-cosine:x", "warmup-cosine:1.5"}) {
    CAPTURE(bad);
    test::check_contains(test::invalid_argument_message([&] { (void)nn::LearningRateSchedule::parse(bad, 0.1f); }),
                         "warmup-cosine:EPOCHS");
  }
}
