// Blocked 2-D Jacobi over several threads: a grid of floats cut into bands of
// rows (blocks), each block an array of its own, with its first and last rows
// also kept in small halo arrays that its neighbours read. An iteration moves
// every block one step on: worker w updates its contiguous share of the
// blocks, each through one kernel that reads the block and the two halo rows
// next to it and writes the block's next state and its next halos (two
// arrays per block and per halo, which swap after the iteration); then the
// workers join. So no two threads write one array or read one block; only a
// halo at the end of a share is read by another worker than the one that
// wrote it, an iteration later.
#include "app_main.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace ca = cachedarrays;

namespace {

// One row of the next state: every inner point becomes the mean of its four
// neighbours, and the grid's first and last columns keep their value. The app
// and the plain reference both call it; no product is added to, so no fused
// multiply-add can make the two differ, and they agree bit for bit.
void jacobi_row(std::span<const float> above, std::span<const float> row, std::span<const float> below,
                std::span<float> out) {
  const std::size_t n = row.size();
  out[0] = row[0];
  out[n - 1] = row[n - 1];
  for (std::size_t j = 1; j + 1 < n; ++j) out[j] = 0.25f * ((above[j] + below[j]) + (row[j - 1] + row[j + 1]));
}

// A block of `columns`-float rows one step on, into `out`. `above` is the row
// just above the block and `below` the one just below, each empty at the
// grid's edge, whose row keeps its value. The new first and last rows also
// go to `first` and `last`, the halos the neighbours read next.
void jacobi_block(std::size_t columns, std::span<const float> above, std::span<const float> in,
                  std::span<const float> below, std::span<float> out, std::span<float> first, std::span<float> last) {
  const std::size_t rows = in.size() / columns;
  const auto row = [columns](auto span, std::size_t r) { return span.subspan(r * columns, columns); };
  for (std::size_t r = 0; r < rows; ++r) {
    const std::span<const float> up = r == 0 ? above : row(in, r - 1);
    const std::span<const float> down = r + 1 == rows ? below : row(in, r + 1);
    if (up.empty() || down.empty()) {
      std::copy(row(in, r).begin(), row(in, r).end(), row(out, r).begin());
    } else {
      jacobi_row(up, row(in, r), down, row(out, r));
    }
  }
  std::copy(row(out, 0).begin(), row(out, 0).end(), first.begin());
  std::copy(row(out, rows - 1).begin(), row(out, rows - 1).end(), last.begin());
}

// Runs one share of a job on each of its workers — the calling thread and
// workers - 1 threads kept for the pool's life, so that an iteration wakes
// threads instead of making them — and returns once every share is done.
class WorkerPool {
 public:
  explicit WorkerPool(int workers) {
    try {
      for (int w = 1; w < workers; ++w) helpers_.emplace_back([this, w] { serve(w); });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Calls share(w) for every worker w, share(0) on this thread; rethrows the
  // first exception a share threw, once all of them have ended.
  void run(const std::function<void(int worker)>& share) {
    {
      const std::lock_guard guard(mutex_);
      share_ = &share;
      unfinished_ = helpers_.size();
      ++round_;
    }
    wake_.notify_all();
    std::exception_ptr error;
    try {
      share(0);
    } catch (...) {
      error = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return unfinished_ == 0; });
    std::exception_ptr helper_error = std::exchange(helper_error_, nullptr);
    if (error == nullptr) error = std::move(helper_error);
    share_ = nullptr;
    if (error != nullptr) std::rethrow_exception(error);
  }

 private:
  void serve(int worker) {
    std::uint64_t served = 0;
    for (;;) {
      const std::function<void(int)>* share = nullptr;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || round_ != served; });
        if (stopping_) return;
        served = round_;
        share = share_;
      }
      std::exception_ptr error;
      try {
        (*share)(worker);
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard guard(mutex_);
      // Moved, not copied: the exception is then released by the thread
      // that rethrows it alone, never by this one as well.
      if (error != nullptr && helper_error_ == nullptr) helper_error_ = std::move(error);
      if (--unfinished_ == 0) done_.notify_one();
    }
  }

  void stop() {
    {
      const std::lock_guard guard(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* share_ = nullptr;
  std::uint64_t round_ = 0;
  std::size_t unfinished_ = 0;
  std::exception_ptr helper_error_;
  bool stopping_ = false;
  std::vector<std::thread> helpers_;  // last: its threads use every member above
};

// More threads than this is a typo rather than a machine's cores.
constexpr int max_workers = 64;

struct Blocks {
  struct Flags {
    int workers = 1;

    void add_to(CLI::App& cli) {
      const auto in_range = [](const std::string& value) -> std::string {
        int n = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (error != std::errc{} || end != value.data() + value.size() || n < 1 || n > max_workers) {
          return fmt::format("takes a whole number of worker threads from 1 to {}; got '{}'", max_workers, value);
        }
        return "";
      };
      cli.add_option("--workers", workers,
                     fmt::format("worker threads the blocks are split over, the calling thread one of them (1 to {})",
                                 max_workers))
          ->check(CLI::Validator(in_range, fmt::format("1..{}", max_workers), "workers"))
          ->capture_default_str();
    }
  };

  std::size_t blocks, block_rows, columns;
  WorkerPool pool;

  Blocks(ca::apps::Size size, const Flags& flags)
      : blocks(size == ca::apps::Size::bench ? 40 : 16),
        block_rows(size == ca::apps::Size::bench ? 256 : 32),
        columns(size == ca::apps::Size::bench ? 4096 : 1024),
        pool(flags.workers) {}

  std::size_t block_floats() const { return block_rows * columns; }

  std::uint64_t footprint() const { return 2 * blocks * (block_floats() + 2 * columns) * sizeof(float); }

  std::vector<float> initial(std::size_t b) const {
    ca::apps::Rng rng{2000 + b};
    std::vector<float> v(block_floats());
    for (float& x : v) x = static_cast<float>(rng.uniform());
    return v;
  }

  // One state of the grid: the blocks, and each block's first and last row.
  struct State {
    std::vector<ca::CachedArray<float>> blocks, first_rows, last_rows;
  };
  struct Arrays {
    State now, next;
  };

  State make_state(ca::Runtime& rt) const {
    State s;
    for (std::size_t b = 0; b < blocks; ++b) {
      s.blocks.push_back(rt.array<float>(block_floats()));
      s.first_rows.push_back(rt.array<float>(columns));
      s.last_rows.push_back(rt.array<float>(columns));
    }
    return s;
  }

  Arrays setup(ca::Runtime& rt) const {
    Arrays a{make_state(rt), make_state(rt)};
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::vector<float> v = initial(b);
      std::copy(v.begin(), v.end(), a.now.blocks[b].write().begin());
      std::copy(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(columns), a.now.first_rows[b].write().begin());
      std::copy(v.end() - static_cast<std::ptrdiff_t>(columns), v.end(), a.now.last_rows[b].write().begin());
    }
    return a;
  }

  // The blocks worker `w` updates: a contiguous share, so that its halo
  // reads cross to another worker's blocks only at the share's two ends.
  std::pair<std::size_t, std::size_t> share_of(int w) const {
    const auto workers = static_cast<std::size_t>(pool.size());
    const auto at = [&](std::size_t k) { return blocks * k / workers; };
    return {at(static_cast<std::size_t>(w)), at(static_cast<std::size_t>(w) + 1)};
  }

  void update_share(ca::Runtime& rt, Arrays& a, int w) const {
    State& now = a.now;
    State& next = a.next;
    const auto [begin, end] = share_of(w);
    const std::span<const float> none;
    const std::size_t c = columns;
    for (std::size_t b = begin; b < end; ++b) {
      if (b + 2 < end) now.blocks[b + 2].will_read();
      const ca::CachedArray<float>& block = now.blocks[b];
      auto next_state = ca::writes(next.blocks[b], next.first_rows[b], next.last_rows[b]);
      if (b == 0) {
        rt.kernel(
            "jacobi-edge", ca::reads(block, now.first_rows[b + 1]), next_state,
            [&](std::span<const float> in, std::span<const float> below, std::span<float> out, std::span<float> first,
                std::span<float> last) { jacobi_block(c, none, in, below, out, first, last); });
      } else if (b + 1 == blocks) {
        rt.kernel(
            "jacobi-edge", ca::reads(now.last_rows[b - 1], block), next_state,
            [&](std::span<const float> above, std::span<const float> in, std::span<float> out, std::span<float> first,
                std::span<float> last) { jacobi_block(c, above, in, none, out, first, last); });
      } else {
        rt.kernel("jacobi", ca::reads(now.last_rows[b - 1], block, now.first_rows[b + 1]), next_state,
                  [&](std::span<const float> above, std::span<const float> in, std::span<const float> below,
                      std::span<float> out, std::span<float> first,
                      std::span<float> last) { jacobi_block(c, above, in, below, out, first, last); });
      }
      now.blocks[b].archive();
      next.blocks[b].archive();
    }
  }

  void iteration(ca::Runtime& rt, Arrays& a, int /*index*/) {
    pool.run([&](int w) { update_share(rt, a, w); });
    std::swap(a.now, a.next);
  }

  std::string verify(Arrays& a, int iterations) const {
    const std::size_t rows = blocks * block_rows;
    std::vector<float> grid, next(rows * columns);
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::vector<float> v = initial(b);
      grid.insert(grid.end(), v.begin(), v.end());
    }
    const auto row = [&](std::vector<float>& g, std::size_t r) {
      return std::span<float>(g).subspan(r * columns, columns);
    };
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t r = 0; r < rows; ++r) {
        if (r == 0 || r + 1 == rows) {
          std::copy(row(grid, r).begin(), row(grid, r).end(), row(next, r).begin());
        } else {
          jacobi_row(row(grid, r - 1), row(grid, r), row(grid, r + 1), row(next, r));
        }
      }
      std::swap(grid, next);
    }
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto got = a.now.blocks[b].read();
      if (std::memcmp(got.data(), &grid[b * block_floats()], block_floats() * sizeof(float)) != 0) {
        return fmt::format("block {} differs from the plain computation after {} iterations", b, iterations);
      }
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Blocks>(argc, argv, "blocks",
                                    "a blocked 2-D Jacobi stencil whose blocks are split over worker threads");
}
