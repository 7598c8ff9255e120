#include "cachedarrays/sim/replay.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

namespace {

void check_models(const Runtime& target, const std::vector<DeviceModel>& models) {
  const DeviceId devices = target.manager().device_count();
  if (models.size() < devices) {
    throw invalid_argument("cachedarrays: replay needs one DeviceModel per target device (" +
                           std::to_string(devices) + "), got " + std::to_string(models.size()));
  }
  for (DeviceId d = 0; d < devices; ++d) {
    if (!(models[d].read_gbps > 0) || !(models[d].write_gbps > 0)) {
      throw invalid_argument("cachedarrays: DeviceModel '" + models[d].name + "' for device " + std::to_string(d) +
                             " needs read and write bandwidths > 0 GB/s");
    }
  }
}

// The replay's view of one trace: trace ids to the target's live objects.
class Replayer {
 public:
  Replayer(const Trace& trace, Runtime& target, const std::vector<DeviceModel>& models)
      : trace_(trace), target_(target), models_(models) {}

  void run(ReplayResult& result) {
    const std::vector<TraceEvent>& events = trace_.events();
    try {
      for (index_ = 0; index_ < events.size(); ++index_) step(events[index_], result);
    } catch (...) {
      release_open();
      throw;
    }
    release_open();
    // Whatever the trace left alive, in creation order.
    for (auto& [id, object] : live_) target_.retire(*object);
    live_.clear();
  }

 private:
  struct OpenKernel {
    std::uint32_t name;
    std::vector<Object*> objects;
    std::vector<Access> accesses;
  };

  [[noreturn]] void fail(const std::string& what) const {
    const TraceEvent& e = trace_.events()[index_];
    throw invalid_argument("cachedarrays: replay: trace event " + std::to_string(index_) + " (" +
                           to_string(e.kind) + "): " + what);
  }

  Object& lookup(std::uint64_t id) const {
    auto it = live_.find(id);
    if (it == live_.end()) {
      fail("object #" + std::to_string(id) + " is unknown (never created in this trace, or already retired); "
           "record the trace from before the objects it uses are created");
    }
    return *it->second;
  }

  void step(const TraceEvent& e, ReplayResult& result) {
    switch (e.kind) {
      case TraceKind::create: {
        if (live_.contains(e.object)) fail("object #" + std::to_string(e.object) + " is created twice");
        live_.emplace(e.object, &target_.create_object(e.bytes));
        break;
      }
      case TraceKind::retire: {
        Object& object = lookup(e.object);
        live_.erase(e.object);
        target_.retire(object);
        break;
      }
      case TraceKind::hint: {
        if (e.detail > static_cast<std::uint8_t>(Hint::archive)) fail("unknown hint " + std::to_string(e.detail));
        target_.hint(lookup(e.object), static_cast<Hint>(e.detail));
        break;
      }
      case TraceKind::kernel_begin: kernel(e, result); break;
      case TraceKind::kernel_end: {
        auto it = std::find_if(open_.rbegin(), open_.rend(), [&](const OpenKernel& k) { return k.name == e.name; });
        if (it == open_.rend()) break;  // a kernel begun before recording started
        release(*it);
        open_.erase(std::next(it).base());
        break;
      }
      case TraceKind::collect: target_.collect(); break;
      // The mechanism's own events are what the target's policy re-derives.
      case TraceKind::allocate:
      case TraceKind::free:
      case TraceKind::copy:
      case TraceKind::evict:
      case TraceKind::defrag_move: break;
    }
  }

  void kernel(const TraceEvent& e, ReplayResult& result) {
    if (static_cast<std::uint64_t>(e.arg_begin) + e.arg_count > trace_.args().size()) {
      fail("its arguments lie outside the trace's argument table");
    }
    if (e.name >= trace_.names().size()) fail("its name index " + std::to_string(e.name) + " is unknown");
    const std::string& name = trace_.names()[e.name];
    OpenKernel k{e.name, {}, {}};
    for (std::uint32_t i = 0; i < e.arg_count; ++i) {
      const TraceArg& a = trace_.args()[e.arg_begin + i];
      k.objects.push_back(&lookup(a.object));
      k.accesses.push_back(a.write ? Access::write : Access::read);
    }
    // Scoped accesses went through Runtime::acquire; kernels through
    // acquire_all: the same calls give the same hints, pins and counters.
    const bool scoped = (name == "read()" || name == "write()") && e.arg_count == 1;
    if (scoped) {
      (void)target_.acquire(*k.objects[0], k.accesses[0]);
    } else {
      std::vector<std::byte*> data(k.objects.size());
      target_.acquire_all(k.objects.data(), k.accesses.data(), data.data(), k.objects.size(), name.c_str());
    }
    ++result.kernels;
    const DataManager& dm = target_.manager();
    for (std::size_t i = 0; i < k.objects.size(); ++i) {
      const DeviceModel& m = models_[dm.device(*dm.getprimary(*k.objects[i]))];
      const double gbps = k.accesses[i] == Access::write ? m.write_gbps : m.read_gbps;
      result.kernel_seconds += static_cast<double>(k.objects[i]->bytes()) / gbps * 1e-9;
    }
    // A scoped access has no end event: it ends before the next event.
    if (scoped) release(k); else open_.push_back(std::move(k));
  }

  static void release(const OpenKernel& k) {
    for (std::size_t i = 0; i < k.objects.size(); ++i) Runtime::release(*k.objects[i], k.accesses[i]);
  }

  void release_open() {
    for (const OpenKernel& k : open_) release(k);
    open_.clear();
  }

  const Trace& trace_;
  Runtime& target_;
  const std::vector<DeviceModel>& models_;
  std::size_t index_ = 0;
  std::map<std::uint64_t, Object*> live_;
  std::vector<OpenKernel> open_;
};

}  // namespace

double modeled_copy_seconds(const Stats& stats, const std::vector<DeviceModel>& models) {
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

ReplayResult replay(const Trace& trace, Runtime& target, const std::vector<DeviceModel>& models) {
  check_models(target, models);
  const Stats before = target.stats();
  ReplayResult result;
  Replayer(trace, target, models).run(result);
  result.stats = target.stats().since(before);
  result.copy_seconds = modeled_copy_seconds(result.stats, models);
  result.modeled_seconds = result.kernel_seconds + result.copy_seconds;
  return result;
}

}  // namespace cachedarrays
