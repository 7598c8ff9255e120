// A process that saves checkpoints and nothing else, for the test that
// kills it at random moments (tests/stop_cleanly.py --check sigkill-saves):
//
//   checkpoint_saver save FILE MiB [named]   saves a checkpoint of about MiB
//                                            MiB over and over (epoch 1, 2,
//                                            ...), printing "saved N" after
//                                            each, until killed
//   checkpoint_saver load FILE               prints "loaded epoch N" (exit 0),
//                                            or why it cannot (exit 1)
//   checkpoint_saver stale FILE              removes the temporary files of
//                                            dead processes, one line each
#include <cachedarrays/error.hpp>
#include <cachedarrays/nn/checkpoint.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace nn = cachedarrays::nn;

namespace {

int save(const std::string& file, long mebibytes, bool named) {
  nn::Checkpoint c;
  c.model = "checkpoint_saver";
  c.tensors.push_back({"values", {mebibytes << 18}, std::vector<float>(static_cast<std::size_t>(mebibytes << 18))});
  const auto kind = named ? nn::CheckpointTemporary::named : nn::CheckpointTemporary::unnamed_where_possible;
  for (std::int64_t epoch = 1;; ++epoch) {
    c.epoch = epoch;
    c.tensors[0].values[static_cast<std::size_t>(epoch) % c.tensors[0].values.size()] = static_cast<float>(epoch);
    nn::save_checkpoint(file, c, kind);
    std::printf("saved %lld\n", static_cast<long long>(epoch));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 2 ? argv[1] : "";
  try {
    if (command == "save" && (argc == 4 || argc == 5)) {
      return save(argv[2], std::atol(argv[3]), argc == 5 && std::string(argv[4]) == "named");
    }
    if (command == "load" && argc == 3) {
      std::printf("loaded epoch %lld\n", static_cast<long long>(nn::load_checkpoint(argv[2]).epoch));
      return 0;
    }
    if (command == "stale" && argc == 3) {
      for (const auto& path : nn::remove_stale_checkpoint_temporaries(argv[2])) {
        std::printf("removed %s\n", path.filename().c_str());
      }
      return 0;
    }
  } catch (const cachedarrays::error& e) {
    std::fprintf(stderr, "checkpoint_saver: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: checkpoint_saver save FILE MiB [named] | load FILE | stale FILE\n");
  return 2;
}
