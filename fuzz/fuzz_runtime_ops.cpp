// libFuzzer target: a sequence of API operations decoded from the
// input — arrays created, written, read, hinted, archived, retired, copied by
// kernels, collections — run against a Runtime of two small tiers under a
// policy the input picks. Every array's contents are checked on every read:
// nothing a program stored may be lost or changed, whatever the policy moves
// and evicts. out_of_memory is an allowed answer (the tiers are small); any
// other exception, a wrong byte, or a sanitizer report is a bug.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"

namespace ca = cachedarrays;

namespace {

// The policies whose handlers run without a program; the planned ones plan
// from a program and are covered by their own tests.
constexpr const char* policies[] = {"first-touch", "all-slow", "hw-cache", "ca", "ca-l", "ca-lm", "ca-lmp"};

struct Tracked {
  ca::CachedArray<std::uint32_t> array;
  std::uint32_t seed = 0;  // element i holds seed * 2654435761 + i
};

std::uint32_t expected(std::uint32_t seed, std::size_t i) { return seed * 2654435761u + static_cast<std::uint32_t>(i); }

void fill(std::span<std::uint32_t> data, std::uint32_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = expected(seed, i);
}

void check(std::span<const std::uint32_t> data, std::uint32_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] != expected(seed, i)) __builtin_trap();  // a stored value was lost or changed
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const char* policy = policies[in.ConsumeIntegralInRange<std::size_t>(0, std::size(policies) - 1)];
  const std::uint64_t fast = 4096 * in.ConsumeIntegralInRange<std::uint64_t>(4, 64);
  ca::Runtime rt({ca::dram(fast, "fast"), ca::dram(1 << 20, "slow")}, ca::policy::Registry::builtin().make(policy));
  std::vector<Tracked> arrays;
  int operations = 0;
  while (in.remaining_bytes() > 0 && ++operations <= 256) {
    try {
      const std::uint8_t op = in.ConsumeIntegralInRange<std::uint8_t>(0, 7);
      const auto pick = [&]() -> Tracked* {
        if (arrays.empty()) return nullptr;
        return &arrays[in.ConsumeIntegralInRange<std::size_t>(0, arrays.size() - 1)];
      };
      switch (op) {
        case 0: {  // create and fill
          const std::size_t count = in.ConsumeIntegralInRange<std::size_t>(1, 8192);
          Tracked t{rt.array<std::uint32_t>(count), in.ConsumeIntegral<std::uint32_t>()};
          {
            auto w = t.array.write();
            fill(std::span<std::uint32_t>(w.begin(), w.end()), t.seed);
          }
          arrays.push_back(std::move(t));
          break;
        }
        case 1:  // read and check
          if (Tracked* t = pick()) {
            auto r = t->array.read();
            check(std::span<const std::uint32_t>(r.begin(), r.end()), t->seed);
          }
          break;
        case 2:  // rewrite with another pattern
          if (Tracked* t = pick()) {
            t->seed = in.ConsumeIntegral<std::uint32_t>();
            auto w = t->array.write();
            fill(std::span<std::uint32_t>(w.begin(), w.end()), t->seed);
          }
          break;
        case 3:  // a kernel copies one array into another of the same length
          if (arrays.size() >= 2) {
            Tracked* a = pick();
            Tracked* b = pick();
            if (a != b && a->array.size() == b->array.size()) {
              rt.kernel(ca::reads(a->array), ca::writes(b->array),
                        [](std::span<const std::uint32_t> src, std::span<std::uint32_t> dst) {
                          std::copy(src.begin(), src.end(), dst.begin());
                        });
              b->seed = a->seed;
            }
          }
          break;
        case 4:
          if (Tracked* t = pick()) t->array.archive();
          break;
        case 5:
          if (Tracked* t = pick()) t->array.hint(in.ConsumeBool() ? ca::Hint::will_read : ca::Hint::will_write);
          break;
        case 6:  // retire
          if (!arrays.empty()) {
            const std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, arrays.size() - 1);
            arrays[i].array.retire();
            arrays.erase(arrays.begin() + static_cast<std::ptrdiff_t>(i));
          }
          break;
        default: rt.collect(); break;
      }
    } catch (const ca::out_of_memory&) {
      // The tiers are small: an allowed answer. Every array stays as it was.
    }
  }
  for (Tracked& t : arrays) {
    try {
      auto r = t.array.read();
      check(std::span<const std::uint32_t>(r.begin(), r.end()), t.seed);
    } catch (const ca::out_of_memory&) {
    }
  }
  return 0;
}
