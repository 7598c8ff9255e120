// paper_reproduction: the CachedArrays paper's comparison (section V) of
// the policies all-fast, all-slow, first-touch, CA:∅, CA:L, CA:LM, CA:LMP and
// the hardware 2LM memory mode (2LM:∅, 2LM:M), over a sweep of the fast
// tier's budget from 100% to 0% of the training footprint, for ResNet,
// DenseNet and VGG. Two kinds of figures, always labelled:
//   emulated  small real training runs on this machine: DRAM + a DAX heap
//             emulated as Optane (emulation::profile("optane")); seconds are
//             the measured wall time of one iteration.
//   modeled   the paper's configurations (DenseNet-264 batch 1536, ResNet-200
//             batch 2048, VGG-416 batch 256; 180 GB DRAM, 1300 GB NVRAM) and
//             the small ones: a dry-run trace replayed on virtual devices
//             (manager/replay.hpp) and through the 2LM model
//             (manager/two_level_memory.hpp); seconds come from the
//             memory-bound time model with published Optane bandwidths.
// slowdown_vs_all_fast is against all-fast in the same kind of figure.
//
//   paper_reproduction [--quick] [--no-emulated] [--no-paper] [--json FILE]
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/emulation.hpp>
#include <cachedarrays/manager/replay.hpp>
#include <cachedarrays/manager/two_level_memory.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/trainer.hpp>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

constexpr std::uint64_t gb = 1'000'000'000ull;
// The paper's platform (published figures; see emulation.hpp): six-channel
// DDR4 and six interleaved Optane DIMMs per socket.
const ca::DeviceModel dram_model{"dram", 118.0, 83.0};
const ca::DeviceModel optane_model{"optane", 39.4, 13.9};
const std::vector<std::string> policies{"all-fast", "all-slow", "first-touch", "ca", "ca-l", "ca-lm", "ca-lmp"};

struct Row {
  std::string kind;  // "emulated" | "modeled"
  std::string model;
  std::string policy;
  double fast_fraction = 0;
  std::uint64_t fast_bytes = 0;
  std::optional<double> seconds;  // empty: out of memory
  double slowdown = 0;
  // Bytes read / written on each tier by kernels and copies (2LM: the cache
  // model's DRAM and NVRAM traffic).
  std::uint64_t fast_read = 0, fast_written = 0, slow_read = 0, slow_written = 0;
  std::string note;
};

Row make_row(std::string kind, std::string model, std::string policy, double fraction, std::uint64_t fast) {
  Row row;
  row.kind = std::move(kind);
  row.model = std::move(model);
  row.policy = std::move(policy);
  row.fast_fraction = fraction;
  row.fast_bytes = fast;
  return row;
}

std::uint64_t round_down(std::uint64_t bytes, std::uint64_t unit) { return std::max(unit, bytes / unit * unit); }

void fill_traffic(Row& row, const ca::Stats& s) {
  row.fast_read = s.kernel_bytes_read[0] + s.bytes_copied_out_of(0);
  row.fast_written = s.kernel_bytes_written[0] + s.bytes_copied_into(0);
  row.slow_read = s.kernel_bytes_read[1] + s.bytes_copied_out_of(1);
  row.slow_written = s.kernel_bytes_written[1] + s.bytes_copied_into(1);
}

std::string label(const nn::ModelConfig& c) { return fmt::format("{}-{} b{}", c.family, c.depth, c.batch); }

// One iteration's application events, recorded by a dry run (no kernels,
// nothing stored) on virtual devices: the events do not depend on the policy.
ca::Trace dry_run_trace(const nn::ModelConfig& config, std::uint64_t footprint) {
  ca::Runtime rt({ca::virtual_device(footprint + footprint / 8 + (1 << 20), "fast"),
                  ca::virtual_device(footprint + (1 << 20), "slow")});
  rt.start_trace();
  {
    nn::Trainer trainer(&rt, nn::build_model(config), {}, /*run_kernels=*/false);
    const std::size_t n = static_cast<std::size_t>(config.batch * config.channels * config.image_size *
                                                   config.image_size);
    // Never touched by a dry run: left uninitialised so no page is faulted in.
    auto images = std::make_unique_for_overwrite<float[]>(n);
    std::vector<float> labels(static_cast<std::size_t>(config.batch), 0.0f);
    (void)trainer.step({images.get(), n}, labels);
    rt.collect();
  }
  rt.collect();
  return *rt.trace();
}

void modeled(const nn::ModelConfig& config, std::vector<double> fractions, std::uint64_t nvram,
             std::optional<std::uint64_t> paper_dram, std::vector<Row>& rows) {
  const std::uint64_t footprint = nn::measure_footprint([&] { return nn::build_model(config); });
  fmt::print(stderr, "modeled {}: footprint {}, recording a dry run...\n", label(config), ca::format_bytes(footprint));
  const ca::Trace trace = dry_run_trace(config, footprint);
  if (paper_dram) fractions.push_back(static_cast<double>(*paper_dram) / static_cast<double>(footprint));
  const std::vector<ca::DeviceModel> models{dram_model, optane_model};
  // The baseline: everything in DRAM.
  double all_fast = 0;
  {
    ca::Runtime rt({ca::virtual_device(footprint + footprint / 8 + (1 << 20), "fast"),
                    ca::virtual_device(nvram, "slow")},
                   ca::policy::Registry::builtin().make("all-fast"));
    all_fast = ca::replay(trace, rt, models).modeled_seconds;
  }
  for (const double fraction : fractions) {
    const std::uint64_t fast = round_down(static_cast<std::uint64_t>(fraction * static_cast<double>(footprint)), 4096);
    for (const std::string& policy : policies) {
      Row row = make_row("modeled", label(config), policy, fraction, fast);
      try {
        ca::Runtime rt({ca::virtual_device(fast, "fast"), ca::virtual_device(nvram, "slow")},
                       ca::policy::Registry::builtin().make(policy));
        const ca::ReplayResult r = ca::replay(trace, rt, models);
        row.seconds = r.modeled_seconds;
        fill_traffic(row, r.stats);
      } catch (const ca::out_of_memory&) {
        row.note = "out of memory";
      }
      rows.push_back(row);
    }
    for (const bool m : {false, true}) {
      Row row = make_row("modeled", label(config), m ? "2lm:m" : "2lm", fraction, fast);
      try {
        const ca::TwoLmResult r = ca::simulate_2lm(trace, fast, nvram, m, dram_model, optane_model);
        row.seconds = r.modeled_seconds;
        row.fast_read = r.counters.dram_bytes_read;
        row.fast_written = r.counters.dram_bytes_written;
        row.slow_read = r.counters.nvram_bytes_read;
        row.slow_written = r.counters.nvram_bytes_written;
        row.note = fmt::format("hit {:.1f}% clean-miss {:.1f}% dirty-miss {:.1f}%", 100 * r.hit_rate,
                               100 * r.clean_miss_rate, 100 * r.dirty_miss_rate);
      } catch (const ca::out_of_memory&) {
        row.note = "out of memory";
      }
      rows.push_back(row);
    }
  }
  for (Row& row : rows) {
    if (row.kind == "modeled" && row.model == label(config) && row.seconds) row.slowdown = *row.seconds / all_fast;
  }
}

double time_step(nn::Trainer& trainer, ca::Runtime& rt, std::span<const float> images, std::span<const float> labels) {
  const auto start = std::chrono::steady_clock::now();
  (void)trainer.step(images, labels);
  rt.collect();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void emulated(const nn::ModelConfig& config, const std::vector<double>& fractions, std::vector<Row>& rows) {
  const std::uint64_t footprint = nn::measure_footprint([&] { return nn::build_model(config); });
  fmt::print(stderr, "emulated {}: footprint {}\n", label(config), ca::format_bytes(footprint));
  auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 1);
  std::vector<float> images(static_cast<std::size_t>(config.batch * config.channels * config.image_size *
                                                     config.image_size));
  std::vector<float> labels(static_cast<std::size_t>(config.batch));
  data->next_batch(images, labels);
  const auto profile = ca::emulation::profile("optane");
  const auto run = [&](const std::string& policy, std::uint64_t fast) -> Row {
    Row row = make_row("emulated", label(config), policy, 0, fast);
    try {
      ca::DeviceSpec slow = ca::dax_file({}, 2 * footprint + (1 << 20), "slow");
      slow.emulation = profile;
      ca::Runtime rt({ca::dram(fast, "fast"), slow}, ca::policy::Registry::builtin().make(policy));
      nn::Trainer trainer(&rt, nn::build_model(config));
      (void)time_step(trainer, rt, images, labels);  // warm-up
      // The best of three iterations: one iteration of a tiny model is short
      // enough for noise to matter. Traffic is the last iteration's.
      double best = 0;
      for (int i = 0; i < 3; ++i) {
        const ca::Stats before = rt.stats();
        const double t = time_step(trainer, rt, images, labels);
        best = i == 0 ? t : std::min(best, t);
        fill_traffic(row, rt.stats().since(before));
      }
      row.seconds = best;
    } catch (const ca::out_of_memory&) {
      row.note = "out of memory";
    }
    return row;
  };
  (void)run("all-fast", footprint + footprint / 8 + (1 << 20));  // warms oneDNN's primitive cache
  const Row baseline = run("all-fast", footprint + footprint / 8 + (1 << 20));
  for (const double fraction : fractions) {
    const std::uint64_t fast = round_down(static_cast<std::uint64_t>(fraction * static_cast<double>(footprint)), 4096);
    for (const std::string& policy : policies) {
      Row row = run(policy, fast);
      row.fast_fraction = fraction;
      if (row.seconds && baseline.seconds) row.slowdown = *row.seconds / *baseline.seconds;
      rows.push_back(row);
    }
  }
}

void print(const std::vector<Row>& rows) {
  fmt::print("{:<9} {:<20} {:<12} {:>6} {:>11} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}  {}\n", "kind", "model",
             "policy", "fast%", "fast", "seconds", "slowdown", "fast rd", "fast wr", "slow rd", "slow wr", "note");
  for (const Row& r : rows) {
    fmt::print("{:<9} {:<20} {:<12} {:>5.0f}% {:>11} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}  {}\n", r.kind, r.model,
               r.policy, 100 * r.fast_fraction, ca::format_bytes(r.fast_bytes),
               r.seconds ? fmt::format("{:.4f}", *r.seconds) : "-",
               r.seconds ? fmt::format("{:.2f}x", r.slowdown) : "-", ca::format_bytes(r.fast_read),
               ca::format_bytes(r.fast_written), ca::format_bytes(r.slow_read), ca::format_bytes(r.slow_written),
               r.note);
  }
}

nlohmann::json to_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    out.push_back({{"kind", r.kind},
                   {"model", r.model},
                   {"policy", r.policy},
                   {"fast_fraction", r.fast_fraction},
                   {"fast_bytes", r.fast_bytes},
                   {"seconds", r.seconds ? nlohmann::json(*r.seconds) : nlohmann::json(nullptr)},
                   {"slowdown_vs_all_fast", r.seconds ? nlohmann::json(r.slowdown) : nlohmann::json(nullptr)},
                   {"fast_bytes_read", r.fast_read},
                   {"fast_bytes_written", r.fast_written},
                   {"slow_bytes_read", r.slow_read},
                   {"slow_bytes_written", r.slow_written},
                   {"note", r.note}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The CachedArrays paper's policy comparison: emulated small runs and modeled paper configurations"};
  bool quick = false;
  bool no_emulated = false;
  bool no_paper = false;
  std::string json_path;
  app.add_flag("--quick", quick, "tiny models and three budgets");
  app.add_flag("--no-emulated", no_emulated, "skip the real (emulated Optane) runs");
  app.add_flag("--no-paper", no_paper, "skip the paper's configurations (modeled)");
  app.add_option("--json", json_path, "write the rows as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  const std::vector<double> fractions =
      quick ? std::vector<double>{1.0, 0.5, 0.0} : std::vector<double>{1.0, 0.75, 0.5, 0.25, 0.1, 0.0};
  std::vector<nn::ModelConfig> small;
  for (const auto& [family, depth] : std::vector<std::pair<std::string, int>>{{"resnet", 18}, {"densenet", 121},
                                                                               {"vgg", 16}}) {
    nn::ModelConfig c;
    c.family = family;
    c.depth = depth;
    c.batch = quick ? 2 : 8;
    c.image_size = 32;
    c.classes = 10;
    c.width = quick ? 0.125 : 0.25;
    small.push_back(c);
  }
  std::vector<Row> rows;
  for (const nn::ModelConfig& c : small) {
    if (!no_emulated) emulated(c, fractions, rows);
    modeled(c, fractions, 4 * nn::measure_footprint([&] { return nn::build_model(c); }), std::nullopt, rows);
  }
  if (!no_paper) {
    for (const auto& [family, depth, batch] : std::vector<std::tuple<std::string, int, std::int64_t>>{
             {"densenet", 264, 1536}, {"resnet", 200, 2048}, {"vgg", 416, 256}}) {
      nn::ModelConfig c;
      c.family = family;
      c.depth = depth;
      c.batch = batch;
      modeled(c, fractions, 1300 * gb, 180 * gb, rows);
    }
  }
  fmt::print("emulated: measured wall time on this machine, slow tier emulated as Optane ({})\n",
             no_emulated ? "not run" : ca::emulation::describe(*ca::emulation::profile("optane")));
  fmt::print("modeled: replay / 2LM model, DRAM {} / {} GB/s, Optane {} / {} GB/s (read / write); "
             "not measurements\n\n",
             dram_model.read_gbps, dram_model.write_gbps, optane_model.read_gbps, optane_model.write_gbps);
  print(rows);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(rows).dump(2) << '\n';
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", json_path);
      return 1;
    }
  }
  return 0;
}
