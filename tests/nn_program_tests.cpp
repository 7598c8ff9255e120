// The trainer's program: the dry run's (nn::dry_run_program) is the program
// a real training run records, kernel for kernel and byte for byte, and its
// max-live lower bound lies under the measured footprint.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

nn::ModelConfig tiny(const std::string& family, int depth) {
  nn::ModelConfig c;
  c.family = family;
  c.depth = depth;
  c.batch = 2;
  c.image_size = 32;
  c.classes = 5;
  c.width = 0.125;
  return c;
}

}  // namespace

TEST_CASE("nn program: the dry run's program is the program a real run records") {
  for (const auto& config : {tiny("resnet", 18), tiny("densenet", 121)}) {
    CAPTURE(config.family);
    const auto build = [&] { return nn::build_model(config); };
    const ca::plan::Program dry = nn::dry_run_program(build);
    CHECK(dry.kernels().size() > 50);
    CHECK(ca::plan::Program::from_trace(dry.to_trace()) == dry);  // what cachedarrays-plan --program replays

    const std::uint64_t footprint = nn::measure_footprint(build);
    ca::Runtime rt({ca::dram(footprint / 3, "fast"), ca::dax_file({}, 2 * footprint + (16 << 20), "slow")},
                   ca::policy::Registry::builtin().make("ca-lm"));
    nn::Trainer trainer(&rt, build());
    auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 3);
    std::vector<float> images(static_cast<std::size_t>(config.batch * config.channels * config.image_size *
                                                       config.image_size));
    std::vector<float> labels(static_cast<std::size_t>(config.batch));
    for (int i = 0; i < 3; ++i) {
      if (i == 1) rt.record_program();  // the second iteration: the first creates the scratchpad
      data->next_batch(images, labels);
      (void)trainer.step(images, labels);
      rt.collect();
    }
    REQUIRE(rt.program() != nullptr);
    const ca::plan::Program& real = *rt.program();
    CHECK(real.kernels().size() == dry.kernels().size());
    CHECK(real.objects() == dry.objects());
    CHECK(real.steps() == dry.steps());
    CHECK(real == dry);
    // What every placement must hold at once is at most what the heap held.
    CHECK(dry.max_live() > 0);
    CHECK(dry.max_live() <= footprint);
  }
}
