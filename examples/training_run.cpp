// train_cnn's run from a program of its own (nn/training_run.hpp): a
// quarter-width ResNet-18 for one epoch over 1,024 Fashion-MNIST images, on
// a fast tier of a quarter of its footprint, under the default policy
// (auto, or CACHEDARRAYS_POLICY).
#include <cachedarrays/nn/training_report.hpp>
#include <cachedarrays/nn/training_run.hpp>

namespace nn = cachedarrays::nn;

int main() {
  nn::TrainingOptions options = nn::training_options_from_environment();
  options.epochs = 1;
  options.train_limit = 1024;
  options.test_limit = 500;
  options.fast_fraction = 0.25;
  nn::settle_training_options(options, {.fast_fraction = true});  // over CACHEDARRAYS_FAST_BYTES
  const nn::TrainingReport report = nn::run_training(options, {});
  nn::print_training_report(report);
}
