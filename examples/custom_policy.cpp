// A user-written policy: new objects start in slow memory, move to fast
// memory only when about to be written, and leave it as soon as archived.
// Built from the paper's Listing 1 (evict) and Listing 2 (prefetch) on the
// data manager API, registered by name, and run on a small workload.
#include <cachedarrays/cachedarrays.hpp>

#include <fmt/core.h>

#include <algorithm>

namespace ca = cachedarrays;

class WriteInArchiveOut final : public ca::policy::Policy {
 public:
  std::string name() const override { return "write-in-archive-out"; }

  bool place(ca::Object& object) override {  // slow first, fast if slow is full
    ca::DataManager& dm = manager();
    for (ca::DeviceId d : {slow(), ca::DeviceId{0}}) {
      if (ca::Region* region = dm.allocate(d, object.bytes())) {
        dm.setprimary(object, *region);
        return true;
      }
    }
    return false;
  }
  // Reads are served where the object is; writes move it in when there is room.
  void will_write(ca::Object& object) override { ca::policy::prefetch(manager(), object, 0, slow()); }
  // Not needed for a while: write back (only if dirty) and free the fast copy now.
  void archive(ca::Object& object) override { ca::policy::evict(manager(), object, 0, slow()); }

 private:
  ca::DeviceId slow() const { return manager().device_count() - 1; }
};

int main() {
  auto registry = ca::policy::Registry::builtin();
  registry.add("write-in-archive-out", "fast memory only between will_write and archive",
               [] { return std::make_unique<WriteInArchiveOut>(); });

  ca::Runtime rt{{ca::dram(8 << 20, "fast"), ca::dax_file({}, 64 << 20, "slow")},
                 registry.make("write-in-archive-out")};

  // A little pipeline: each stage reads the previous array and writes the next.
  std::vector<ca::CachedArray<float>> stages;
  stages.push_back(rt.array<float>(1 << 20));
  {
    auto w = stages[0].write();
    std::fill(w.begin(), w.end(), 1.0f);
  }
  stages[0].archive();
  for (int i = 1; i < 6; ++i) {
    stages.push_back(rt.array<float>(1 << 20));
    rt.kernel(ca::reads(stages[i - 1]), ca::writes(stages[i]), [](std::span<const float> in, std::span<float> out) {
      std::transform(in.begin(), in.end(), out.begin(), [](float v) { return v * 2; });
    });
    stages[i].archive();
  }
  const float last = stages.back().read()[12345];
  const ca::Stats stats = rt.stats();
  fmt::print("policy {}: last stage holds {} (expected 32)\n{}\n", rt.policy_name(), last, stats);
  // Every stage was written in fast memory and written back once when archived.
  const bool ok =
      last == 32.0f && stats.policy.prefetches == 6 && stats.policy.writebacks == 6 && rt.usage()[0].bytes_used == 0;
  return ok ? 0 : 1;
}
