// The trainer's program: the dry run's (nn::dry_run_program) is the program
// a real training run records, kernel for kernel and byte for byte, and its
// max-live lower bound lies under the measured footprint.
#include <doctest/doctest.h>

#include <algorithm>
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

nn::ModelConfig tiny_model_config(const std::string& family, int depth) {
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
  nn::ModelConfig vit = tiny_model_config("vit", 2);
  vit.image_size = 16;
  vit.width = 1;
  vit.vit = {.patch = 4, .dim = 16, .heads = 2, .mlp_ratio = 2};
  for (const auto& config : {tiny_model_config("resnet", 18), tiny_model_config("densenet", 121), vit}) {
    CAPTURE(config.family);
    const auto build = [&] { return nn::build_model(config); };
    // The ViT with AdamW: its two moments per parameter are in the program.
    nn::TrainerOptions options;
    if (config.family == "vit") options.optimizer = nn::Optimizer::adamw;
    const ca::plan::Program dry = nn::dry_run_program(build, options);
    CHECK(dry.kernels().size() > 50);
    CHECK(ca::plan::Program::from_trace(dry.to_trace()) == dry);  // what cachedarrays-plan --program replays

    const std::uint64_t footprint = nn::measure_footprint(build, options);
    ca::Runtime rt({ca::dram(footprint / 3, "fast"), ca::dax_file({}, 2 * footprint + (16 << 20), "slow")},
                   ca::policy::Registry::builtin().make("ca-lm"));
    nn::Trainer trainer(&rt, build(), options);
    auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 3);
    std::vector<float> images(
        static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size));
    std::vector<float> labels(static_cast<std::size_t>(config.batch));
    for (int i = 0; i < 3; ++i) {
      // The first iteration: it is the steady one already (a kernel's
      // scratchpad is its own, made and retired around it).
      if (i == 0) rt.record_program();
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

TEST_CASE("nn program: each kernel's oneDNN scratchpad is its own, made before it and retired after it") {
  // A scratchpad is the one kind of object a kernel writes and no kernel
  // reads. Shared by every kernel and grown to the largest need, it would
  // make each kernel with any scratch at all write the largest one whole.
  const ca::plan::Program program =
      nn::dry_run_program([] { return nn::build_model(tiny_model_config("resnet", 18)); });
  const std::size_t objects = program.objects().size();
  std::vector<int> writers(objects, 0), readers(objects, 0);
  for (const ca::plan::ProgramKernel& kernel : program.kernels()) {
    for (const ca::plan::ProgramArg& arg : kernel.args)
      ++(arg.access == ca::Access::read ? readers : writers)[arg.object];
  }
  // The objects created right before a kernel that uses them and retired
  // right after it.
  std::vector<char> around_its_kernel(objects, 0);
  const auto& steps = program.steps();
  for (std::size_t s = 1; s + 1 < steps.size(); ++s) {
    const std::uint32_t o = steps[s - 1].index;
    if (steps[s - 1].kind != ca::plan::StepKind::create || steps[s].kind != ca::plan::StepKind::kernel ||
        steps[s + 1].kind != ca::plan::StepKind::retire || steps[s + 1].index != o) {
      continue;
    }
    if (program.uses(o) == std::vector<std::uint32_t>{steps[s].index}) around_its_kernel[o] = 1;
  }
  std::size_t scratchpads = 0;
  for (std::uint32_t o = 0; o < objects; ++o) {
    if (readers[o] != 0 || writers[o] == 0) continue;
    CAPTURE(o);
    CHECK(writers[o] == 1);  // momentum too: the SGD step's, one per parameter
    if (program.objects()[o].persistent) continue;
    CHECK(around_its_kernel[o]);
    ++scratchpads;
  }
  CHECK(scratchpads > 10);  // batch norm's and the convolutions' (the test means something)
}

TEST_CASE("nn program: AutoSwap plans Inception v4's program under a limit it meets") {
  // A tiny Inception v4 at its smallest image: 149 convolutions, n-input
  // concatenations, and objects far under AutoSwap's 1 MB filter, so the
  // filter is off.
  nn::ModelConfig config = tiny_model_config("inception", 4);
  config.image_size = 75;
  config.width = 0.0625;
  const ca::plan::Program program = nn::dry_run_program([&] { return nn::build_model(config); });
  const ca::plan::MemoryBound model;
  const ca::plan::TierCosts costs = ca::plan::TierCosts::from_model(program, model, {100, 100}, {30, 10});
  ca::plan::AutoswapOptions options;
  options.score = ca::plan::AutoswapScore::doa;
  options.min_bytes = 0;
  options.limit = program.max_live() * 3 / 4;
  const ca::plan::AutoswapPlan plan = ca::plan::autoswap_plan(program, costs, options);
  CAPTURE(program.max_live());
  CAPTURE(plan.peak);
  CHECK(plan.original_peak == program.max_live());
  CHECK(plan.candidates > 0);
  CHECK_FALSE(plan.swaps.empty());
  REQUIRE(plan.load.size() == program.kernels().size());
  CHECK(plan.peak == *std::max_element(plan.load.begin(), plan.load.end()));
  CHECK(plan.fits);
  CHECK(plan.peak <= options.limit);
  CHECK(plan.peak < plan.original_peak);
}
