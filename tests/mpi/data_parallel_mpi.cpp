// Data-parallel training with real MPI ranks (run by ctest under
// `mpirun -np 2`, tests/mpi/CMakeLists.txt). One program, one check per
// --check:
//
//  matches   Both ranks train VGG-11 (no batch norm) and ResNet-18 (batch
//            norm) for several steps through nn::fit, with gradients on both
//            tiers and many buckets. Then:
//            - every rank's state (parameters, momentum, running statistics)
//              is bit-identical to rank 0's;
//            - for VGG, rank 0 trains the same model as one process on the
//              global batch, and the loss of every step agrees within
//              `loss_tolerance` (relative), as do the final parameters within
//              `parameter_tolerance`. Not bit for bit: one process sums the
//              gradient over all 8 samples inside oneDNN's kernels, the ranks
//              each over 4 and then MPI adds the two halves, so the float
//              additions happen in another order (ε ≈ 6e-8 per addition);
//              the differences that leaves grow through the steps (SGD with
//              momentum feeds them back), and the tolerances leave room for
//              that over these few steps while a wrong average (a sum not
//              divided by the ranks, a shard trained twice, a missing
//              bucket) is off by far more. The check proves it is sharp:
//              one process whose gradients are summed instead of averaged
//              (the learning rate doubled) must fall outside it.
//  resume    A checkpoint rank 0 writes after 3 steps, resumed by both
//            ranks, gives the uninterrupted run bit for bit; one process
//            resuming it carries on (a run may change its rank count).
//  exit      Rank 1 leaves in its third step without a word (_Exit(3)); the
//            job must end, not hang (tests/mpi/run_mpi.cmake checks the exit
//            status, the time and mpirun's message).
//  hang      Rank 1 stops answering in its third step; rank 0 must give up
//            after CACHEDARRAYS_MPI_TIMEOUT seconds with a message saying
//            what it waited for, and end the job.
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/fit.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/mpi_communicator.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

constexpr std::int64_t global_batch = 8;
constexpr int steps = 6;
constexpr double loss_tolerance = 1e-5;
constexpr double parameter_tolerance = 1e-4;

int failures = 0;

void fail(const std::string& what) {
  ++failures;
  fmt::print(stderr, "FAILED: {}\n", what);
}

nn::ModelConfig config(const std::string& family, std::int64_t batch) {
  return {.family = family,
          .depth = family == "vgg" ? 11 : 18,
          .batch = batch,
          .image_size = 32,
          .classes = 10,
          .width = 0.125};
}

// One rank's tiers: a fast tier of 30% of the footprint, so that gradients
// and buckets also move through the slow one.
ca::Runtime make_runtime(const std::function<nn::Graph()>& build, const nn::TrainerOptions& options) {
  const std::uint64_t footprint = nn::measure_footprint(build, options);
  return ca::Runtime(
      {ca::dram(std::max<std::uint64_t>(footprint * 3 / 10, 1 << 16), "fast"), ca::dax_file({}, 3 * footprint, "slow")},
      ca::policy::Registry::builtin().make("ca-lm"));
}

nn::FitOptions fit_options(std::int64_t batch, const std::function<void(const nn::FitStep&)>& after_step,
                           float learning_rate = 0.05f) {
  nn::FitOptions fit;
  fit.train.batch = batch;
  fit.train.limit = steps * batch;
  fit.train.seed = 5;
  fit.max_iterations = steps;
  fit.schedule = nn::LearningRateSchedule::parse("constant", learning_rate);
  fit.after_step = after_step;
  return fit;
}

struct Run {
  std::vector<float> losses;
  std::vector<nn::CheckpointTensor> state;
};

// How a run starts and stops: a checkpoint written at its end (and read
// first when resuming), and the steps it runs.
struct Leg {
  std::string checkpoint;
  bool resume = false;
  int iterations = steps;
};

// Trains `family` for `steps` steps over the world (null: one process) on
// global batches drawn by fit from the same synthetic set.
Run train(const std::string& family, nn::Communicator* world, const std::function<void(int)>& at_step = {},
          const Leg& leg = {}) {
  const int ranks = world != nullptr ? world->size() : 1;
  const nn::ModelConfig shard = config(family, nn::shard_batch(global_batch, ranks));
  const auto build = [&] { return nn::build_model(shard); };
  nn::TrainerOptions options;
  options.seed = 3;
  options.data_parallel.communicator = world;
  options.data_parallel.bucket_bytes = 16 << 10;
  ca::Runtime rt = make_runtime(build, options);
  nn::Trainer trainer(&rt, build(), options);
  const nn::DataSplits data = nn::open_data("synthetic", {3, 32, 32}, 10, 11);
  Run run;
  nn::FitOptions fit = fit_options(global_batch, [&](const nn::FitStep& s) {
    run.losses.push_back(s.loss);
    if (at_step) at_step(static_cast<int>(s.iteration));
  });
  fit.checkpoint = leg.checkpoint;
  fit.resume = leg.resume;
  fit.max_iterations = leg.iterations;
  fit.model = family;
  (void)nn::fit(trainer, *data.train, nullptr, fit);
  run.state = trainer.state();
  return run;
}

// Compares every rank's state with rank 0's, bit for bit; returns the
// number of tensors that differ on any rank.
double differing_tensors(nn::Communicator& world, std::vector<nn::CheckpointTensor> state) {
  double differing = 0;
  for (nn::CheckpointTensor& t : state) {
    std::vector<float> root = t.values;
    world.broadcast(std::as_writable_bytes(std::span<float>(root)), 0, t.name);
    if (std::memcmp(root.data(), t.values.data(), root.size() * sizeof(float)) != 0) {
      fmt::print(stderr, "rank {}: '{}' differs from rank 0's\n", world.rank(), t.name);
      differing += 1;
    }
  }
  std::vector<double> sum{differing};
  world.wait(world.start_sum(std::span<double>(sum), "the count of differing tensors"));
  return sum[0];
}

double relative(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

void check_matches(nn::MpiCommunicator& world) {
  for (const std::string family : {"vgg", "resnet"}) {
    const Run parallel = train(family, &world);
    const double differing = differing_tensors(world, parallel.state);
    if (differing != 0) fail(fmt::format("{}: {} tensors differ between the ranks", family, differing));
    if (world.rank() == 0) {
      fmt::print("{}: {} state tensors bit-identical on all {} ranks after {} steps\n", family, parallel.state.size(),
                 world.size(), steps);
    }
    if (family != "vgg" || world.rank() != 0) continue;
    // Batch norm normalises each rank's shard by its own statistics (as
    // DDP), so only the model without it equals one process's training.
    const Run single = train(family, nullptr);
    double worst_loss = 0;
    for (int s = 0; s < steps; ++s) {
      const double d =
          relative(parallel.losses.at(static_cast<std::size_t>(s)), single.losses.at(static_cast<std::size_t>(s)));
      worst_loss = std::max(worst_loss, d);
      fmt::print("  step {}: loss {:.9f} over 2 ranks, {:.9f} as one process (relative difference {:.2e})\n", s + 1,
                 parallel.losses[static_cast<std::size_t>(s)], single.losses[static_cast<std::size_t>(s)], d);
    }
    double worst_parameter = 0;
    for (std::size_t i = 0; i < single.state.size(); ++i) {
      for (std::size_t e = 0; e < single.state[i].values.size(); ++e) {
        worst_parameter = std::max(worst_parameter, relative(parallel.state[i].values[e], single.state[i].values[e]));
      }
    }
    fmt::print(
        "vgg: largest relative difference from one process: loss {:.2e} (tolerance {:.0e}), state {:.2e} "
        "(tolerance {:.0e})\n",
        worst_loss, loss_tolerance, worst_parameter, parameter_tolerance);
    if (!(worst_loss <= loss_tolerance)) fail("the losses over 2 ranks are not one process's");
    if (!(worst_parameter <= parameter_tolerance)) fail("the parameters over 2 ranks are not one process's");
    // The tolerance is sharp: gradients summed over 2 ranks but not divided
    // (one process at twice the learning rate) are well outside it.
    const nn::ModelConfig m = config(family, global_batch);
    const auto build = [&] { return nn::build_model(m); };
    nn::TrainerOptions options;
    options.seed = 3;
    ca::Runtime rt = make_runtime(build, options);
    nn::Trainer other(&rt, build(), options);
    const nn::DataSplits data = nn::open_data("synthetic", {3, 32, 32}, 10, 11);
    std::vector<float> other_losses;
    (void)nn::fit(other, *data.train, nullptr,
                  fit_options(
                      global_batch, [&](const nn::FitStep& s) { other_losses.push_back(s.loss); }, 0.1f));
    double other_worst = 0;
    for (int s = 0; s < steps; ++s) {
      other_worst = std::max(other_worst, relative(other_losses.at(static_cast<std::size_t>(s)),
                                                   single.losses.at(static_cast<std::size_t>(s))));
    }
    fmt::print("vgg: gradients summed, not averaged, differ from one process's losses by {:.2e}\n", other_worst);
    if (other_worst <= loss_tolerance) fail("the loss tolerance does not tell a sum from an average");
  }
}

// A checkpoint written by 2 ranks after 3 steps (by rank 0 alone) and
// resumed by them for 3 more gives exactly the uninterrupted run; one
// process resuming it on the same global batch continues within the
// tolerance of the run that stayed on 2 ranks.
void check_resume(nn::MpiCommunicator& world) {
  for (const std::string family : {"resnet", "vgg"}) {
    const std::string path = "/dev/shm/cachedarrays-mpi-resume-" + std::to_string(::getppid()) + "-" + family + ".ckpt";
    const Run whole = train(family, &world);
    (void)train(family, &world, {}, {.checkpoint = path, .resume = false, .iterations = 3});
    // The resumed run writes over it at its end: one process resumes a copy.
    const std::string copy = path + ".after-3";
    if (world.rank() == 0) std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    const Run resumed = train(family, &world, {}, {.checkpoint = path, .resume = true, .iterations = 3});
    if (resumed.losses.size() != 3) fail(fmt::format("resumed for {} steps, not 3", resumed.losses.size()));
    for (std::size_t s = 0; s < resumed.losses.size(); ++s) {
      if (std::memcmp(&resumed.losses[s], &whole.losses.at(s + 3), sizeof(float)) != 0) {
        fail(fmt::format("step {} resumed: loss {} instead of the uninterrupted run's {}", s + 4, resumed.losses[s],
                         whole.losses[s + 3]));
      }
    }
    for (std::size_t i = 0; i < whole.state.size(); ++i) {
      if (std::memcmp(whole.state[i].values.data(), resumed.state[i].values.data(),
                      whole.state[i].values.size() * sizeof(float)) != 0) {
        fail("'" + whole.state[i].name + "' after resuming differs from the uninterrupted run's");
      }
    }
    if (world.rank() == 0) {
      fmt::print(
          "{}: resumed on 2 ranks after 3 steps, the last 3 losses and all {} state tensors are the "
          "uninterrupted run's bit for bit\n",
          family, whole.state.size());
      if (family != "vgg") {
        std::remove(path.c_str());
        std::remove(copy.c_str());
        continue;
      }
      const Run alone = train(family, nullptr, {}, {.checkpoint = copy, .resume = true, .iterations = 3});
      double worst = 0;
      for (std::size_t s = 0; s < alone.losses.size(); ++s)
        worst = std::max(worst, relative(alone.losses[s], whole.losses[s + 3]));
      // VGG has no batch norm, whose statistics differ over a batch and its halves.
      fmt::print(
          "{}: one process resuming the 2 ranks' checkpoint: losses within {:.2e} of theirs (tolerance {:.0e})\n",
          family, worst, loss_tolerance);
      if (alone.losses.size() != 3 || !(worst <= loss_tolerance))
        fail("one process did not continue the 2 ranks' training");
      std::remove(path.c_str());
      std::remove(copy.c_str());
    }
  }
}

// Rank 1 stops in its third step: it leaves (exit) or stops answering (hang).
void check_rank_failure(nn::MpiCommunicator& world, bool leaves) {
  (void)train("vgg", &world, [&](int iteration) {
    if (world.rank() != 1 || iteration != 2) return;
    if (leaves) {
      fmt::print(stderr, "rank 1: leaving without a word\n");
      std::_Exit(3);
    }
    fmt::print(stderr, "rank 1: no longer answering\n");
    std::this_thread::sleep_for(std::chrono::minutes(10));  // mpirun ends it once rank 0 aborts the job
  });
  fail("training went on after rank 1 stopped");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string check = argc > 2 && std::string(argv[1]) == "--check" ? argv[2] : "";
  if (check != "matches" && check != "resume" && check != "exit" && check != "hang") {
    fmt::print(stderr, "usage: {} --check matches|resume|exit|hang (under mpirun -np 2)\n", argv[0]);
    return 2;
  }
  nn::MpiCommunicator world;
  if (world.size() != 2) {
    fmt::print(stderr, "run under mpirun -np 2, not {} ranks\n", world.size());
    return 2;
  }
  try {
    if (check == "matches") check_matches(world);
    if (check == "resume") check_resume(world);
    if (check == "exit") check_rank_failure(world, true);
    if (check == "hang") check_rank_failure(world, false);
  } catch (const std::exception& e) {
    world.abort(e.what());
  }
  std::vector<double> failed{static_cast<double>(failures)};
  world.wait(world.start_sum(std::span<double>(failed), "the failure count"));
  if (world.rank() == 0) fmt::print("{}\n", failed[0] == 0 ? "all checks passed" : "checks FAILED");
  return failed[0] == 0 ? 0 : 1;
}
