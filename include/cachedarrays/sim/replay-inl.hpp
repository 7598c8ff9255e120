// Implementation of replay.hpp (header-only mode includes it from there; the
// compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/replay.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/plan/schedule/copy_timeline.hpp"
#include "cachedarrays/runtime/pinned_kernel.hpp"
#include "cachedarrays/sim/trace_walker.hpp"

namespace cachedarrays {

namespace detail {

CACHEDARRAYS_INLINE void check_models(const Runtime& target, const std::vector<DeviceModel>& models) {
  const DeviceId devices = target.manager().device_count();
  if (models.size() < devices) {
    throw invalid_argument("cachedarrays: replay needs one DeviceModel per target device (" + std::to_string(devices) +
                           "), got " + std::to_string(models.size()));
  }
  for (DeviceId d = 0; d < devices; ++d) {
    if (!(models[d].read_gbps > 0) || !(models[d].write_gbps > 0)) {
      throw invalid_argument("cachedarrays: DeviceModel '" + models[d].name + "' for device " + std::to_string(d) +
                             " needs read and write bandwidths > 0 GB/s");
    }
  }
}

// Replays through the target's policy: the same hints, pins and counters
// as the recorded run, and each kernel's time under the kernel time model.
class Replayer final : public TraceWalker {
 public:
  Replayer(const Trace& trace, Runtime& target, const std::vector<DeviceModel>& models,
           const plan::KernelTimeModel& kernel_time, ReplayResult& result)
      : TraceWalker(trace, target, "replay"),
        models_(models),
        kernel_time_(kernel_time),
        result_(result),
        timeline_(models, target.manager().usage(), target.manager().mover_options().threads),
        saved_hook_(target.manager().trace()),
        before_(target.stats()) {
    target.manager().set_trace(&copies_);
  }
  ~Replayer() override {
    open_.clear();  // unpin before the base retires the arrays
    target().manager().set_trace(saved_hook_);
  }

  // The timeline once the walk is over (copies made at the end included).
  const plan::CopyTimeline& finish() {
    feed_copies();
    return timeline_;
  }
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

 private:
  // A kernel begun and not yet ended: its arguments stay pinned.
  struct OpenKernel {
    std::uint32_t name = 0;
    std::vector<Object*> objects;
    std::vector<Access> accesses;
    std::vector<std::byte*> data;
    std::unique_ptr<PinnedKernel> pinned;
  };

  void hint(CachedArray<std::byte>& array, Hint hint) override { array.hint(hint); }

  void kernel_begin(const TraceEvent& e, std::span<CachedArray<std::byte>* const> arrays,
                    std::span<const TraceArg> args) override {
    const std::string& name = trace().names()[e.name];
    auto k = std::make_unique<OpenKernel>();
    k->name = e.name;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      k->objects.push_back(&arrays[i]->object());
      k->accesses.push_back(args[i].write ? Access::write : Access::read);
    }
    k->data.resize(k->objects.size());
    // The same hints, pins and counters as the recorded kernel or scoped
    // access, under the same name.
    k->pinned = std::make_unique<PinnedKernel>(target(), name.c_str(), k->objects, k->accesses, k->data);
    ++result_.kernels;
    const DataManager& dm = target().manager();
    std::vector<plan::ArgTraffic> traffic(k->objects.size());
    for (std::size_t i = 0; i < k->objects.size(); ++i) {
      const DeviceModel& m = models_[dm.device(*dm.getprimary(*k->objects[i]))];
      const Access access = k->accesses[i];
      traffic[i] = {k->objects[i]->bytes(), access, access == Access::write ? m.write_gbps : m.read_gbps};
    }
    const double seconds = kernel_time_.seconds(name, traffic);
    result_.kernel_seconds += seconds;
    // The copies its hints and the policy's on_kernel_begin made come
    // before it on the timeline.
    feed_copies();
    std::vector<std::uint64_t> ids;
    for (const Object* o : k->objects) ids.push_back(o->id());
    timeline_.kernel(ids, seconds);
    // A scoped access has no end event: it ends before the next event.
    const bool scoped =
        (name == scoped_access_kernel(Access::read) || name == scoped_access_kernel(Access::write)) && e.arg_count == 1;
    if (!scoped) open_.push_back(std::move(k));
  }

  void kernel_end(const TraceEvent& e) override {
    auto it = std::find_if(open_.rbegin(), open_.rend(), [&](const auto& k) { return k->name == e.name; });
    if (it == open_.rend()) return;  // a kernel begun before recording started
    (*it)->pinned->finish();
    open_.erase(std::next(it).base());
  }

  void stop() override { open_.clear(); }

  void iteration_begin() override {
    feed_copies();
    ReplayIterationMark mark;
    mark.seconds = timeline_.now();
    mark.kernel_seconds = result_.kernel_seconds;
    mark.copy_seconds = timeline_.copy_seconds();
    mark.exposed_copy_seconds = timeline_.exposed_copy_seconds();
    mark.stats = target().stats().since(before_);
    result_.iterations.push_back(std::move(mark));
  }

  // The copies, defrag moves, allocations and frees recorded since the last
  // call, onto the timeline (the other mechanism events are dropped as they
  // come: only moving bytes takes time here, and only room for them delays
  // it).
  void feed_copies() {
    for (const TraceEvent& e : copies_.events()) {
      switch (e.kind) {
        case TraceKind::copy:
        case TraceKind::defrag_move: timeline_.copy(e); break;
        case TraceKind::allocate: timeline_.allocate(e); break;
        case TraceKind::free: timeline_.free(e); break;
        default: break;
      }
    }
    copies_.clear();
  }

  const std::vector<DeviceModel>& models_;
  const plan::KernelTimeModel& kernel_time_;
  ReplayResult& result_;
  std::vector<std::unique_ptr<OpenKernel>> open_;
  Trace copies_;  // the target manager's events during the replay
  plan::CopyTimeline timeline_;
  Trace* saved_hook_;
  Stats before_;  // the target's counters when the replay began
};

}  // namespace detail

CACHEDARRAYS_INLINE double modeled_copy_seconds(const Stats& stats, const std::vector<DeviceModel>& models) {
  double seconds = 0;
  for (std::size_t src = 0; src < stats.bytes_copied.size(); ++src) {
    for (std::size_t dst = 0; dst < stats.bytes_copied[src].size(); ++dst) {
      const std::uint64_t bytes = stats.bytes_copied[src][dst];
      if (bytes == 0) continue;
      if (src >= models.size() || dst >= models.size()) {
        throw invalid_argument("cachedarrays: no DeviceModel for device " + std::to_string(std::max(src, dst)) +
                               ", which copies moved bytes through");
      }
      seconds += static_cast<double>(bytes) / std::min(models[src].read_gbps, models[dst].write_gbps) * 1e-9;
    }
  }
  return seconds;
}

CACHEDARRAYS_INLINE SteadyWindow steady_window(std::size_t marks) noexcept {
  if (marks < 2) return {0, 0};  // none: the whole replay
  constexpr std::size_t warm_up = 2;
  const std::size_t first = std::min(warm_up, marks - 2);
  return {first, marks - 1};
}

CACHEDARRAYS_INLINE ReplayIteration steady_iteration(const ReplayResult& result) {
  ReplayIteration it;
  const SteadyWindow window = steady_window(result.iterations.size());
  if (window.iterations() == 0) {
    it.seconds = result.modeled_seconds;
    it.kernel_seconds = result.kernel_seconds;
    it.copy_seconds = result.copy_seconds;
    it.exposed_copy_seconds = result.exposed_copy_seconds;
    it.stats = result.stats;
    return it;
  }
  const ReplayIterationMark& from = result.iterations[window.first];
  const ReplayIterationMark& to = result.iterations[window.end];
  const auto n = static_cast<double>(window.iterations());
  it.seconds = (to.seconds - from.seconds) / n;
  it.kernel_seconds = (to.kernel_seconds - from.kernel_seconds) / n;
  it.copy_seconds = (to.copy_seconds - from.copy_seconds) / n;
  it.exposed_copy_seconds = (to.exposed_copy_seconds - from.exposed_copy_seconds) / n;
  it.stats = to.stats.since(from.stats);
  it.iterations = window.iterations();
  return it;
}

CACHEDARRAYS_INLINE ReplayResult replay(const Trace& trace, Runtime& target, const std::vector<DeviceModel>& models,
                                        const plan::KernelTimeModel* kernel_time) {
  detail::check_models(target, models);
  const Stats before = target.stats();
  ReplayResult result;
  const plan::MemoryBound memory_bound;
  detail::Replayer replayer(trace, target, models, kernel_time != nullptr ? *kernel_time : memory_bound, result);
  replayer.run();
  const plan::CopyTimeline& timeline = replayer.finish();
  result.stats = target.stats().since(before);
  result.copy_seconds = timeline.copy_seconds();
  result.modeled_seconds = timeline.seconds();
  result.exposed_copy_seconds = timeline.exposed_copy_seconds();
  return result;
}

}  // namespace cachedarrays
