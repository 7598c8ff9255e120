// The Runtime owns the heaps (through the DataManager), the policy and the
// stats, the lock and the trace; there is no global instance, so a program
// or a test may build as many as it likes (docs/design.md "The user's
// view"). It hands the rest to named collaborators, each in a file of its
// own: the program's recording and output (ProgramRecorder), its kernels'
// online profiles (KernelProfiling), the out_of_memory snapshots
// (SnapshotDirectory) and the leak report (LeakReport); the environment it
// reads is read in runtime/environment.hpp. All manager state sits behind
// one lock, and hints from any thread are safe. Reads of objects that
// do not move skip the lock (docs/design.md "Reads that skip the lock"): one
// lock taken by every read would make threads reading their own arrays
// slower together than one of them alone.
#pragma once

#include "cachedarrays/config.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/thread_stripes.hpp"
#include "cachedarrays/policy/hand_over.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/runtime/kernel_profiling.hpp"
#include "cachedarrays/runtime/leak_report.hpp"
#include "cachedarrays/runtime/memory_snapshot.hpp"
#include "cachedarrays/runtime/placement_lock.hpp"
#include "cachedarrays/runtime/program_recorder.hpp"
#include "cachedarrays/runtime/snapshot_directory.hpp"

namespace cachedarrays {

template <typename T>
class CachedArray;
template <typename T, Access A>
class ScopedAccess;
class PinnedKernel;
struct RuntimeEnvironment;

/// The library's entry point: owns the heaps (through the DataManager), the
/// placement policy and the stats, makes arrays (array()) and runs kernels
/// over them (kernel()). No global instance: make as many as needed. Every
/// call is safe from any thread; all manager state sits behind one lock,
/// which reads of objects that stay where they are skip
/// (Policy::read_hint_delivery).
class Runtime {
 public:
  /// The runtime's lock (lock()): while it is held no other call of the
  /// runtime changes anything, and no read pins an object without it. It
  /// first hands the policy the will_read hints deferred by reads that
  /// skipped the lock.
  class Lock {
   public:
    /// Takes `runtime`'s lock.
    explicit Lock(Runtime& runtime);
    /// Lets go of it.
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    Runtime& runtime_;
    // Set when this acquisition is one of those timed (Stats::lock).
    std::chrono::steady_clock::time_point timed_from_{};
    bool timed_ = false;
  };

  /// Reserves every device now. Without a policy, first-touch is used
  /// (fastest device with room; never moves). `mover` configures the
  /// threads that make the policy's asynchronous copies. Reads the
  /// environment through runtime/environment.hpp: first the process's
  /// settings for the heaps and the copy engine (apply_process_environment:
  /// CACHEDARRAYS_COPY, CACHEDARRAYS_NT_ISA, TMPDIR), then its own
  /// (read_runtime_environment: CACHEDARRAYS_SNAPSHOT_DIR as
  /// set_snapshot_directory, CACHEDARRAYS_LEAK_REPORT 1 as
  /// set_leak_report(&std::cerr), CACHEDARRAYS_PROGRAM_OUT as
  /// set_program_output); throws invalid_argument naming the variable for a
  /// bad value.
  /// `trace_file`, when given: every event is recorded from now on
  /// (start_trace) and written there when the runtime is destroyed
  /// (Trace::save; it must end in .json or .csv, else invalid_argument; a
  /// write that fails then is reported on standard error, since a destructor
  /// cannot throw). runtime_from_environment sets it from CACHEDARRAYS_TRACE.
  explicit Runtime(std::vector<DeviceSpec> devices, std::unique_ptr<policy::Policy> policy = nullptr,
                   MoverOptions mover = {}, std::filesystem::path trace_file = {});
  /// Writes the leak report (when set_leak_report gave a stream) and the
  /// trace file (when one was given), then frees every object and heap.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A new array of `count` elements, placed by the policy. Throws
  /// invalid_argument for 0 or an overflowing count, out_of_memory when no
  /// device can hold it (every other object stays intact).
  template <typename T>
  [[nodiscard]] CachedArray<T> array(std::size_t count);

  /// Runs `f` on resolved spans: kernel(reads(a, b), writes(c), f) calls
  /// f(span<const A>, span<const B>, span<C>). Each argument gets its hint
  /// (will_read / will_write) and is pinned before the next one is hinted,
  /// so a later hint cannot evict an earlier argument. Defined in kernel.hpp.
  ///
  /// A name may come first: kernel("stencil", reads(a), writes(b), f) (a
  /// `const char*`, `std::string` or `std::string_view`; copied where it
  /// must outlive the call, so a temporary is safe). The trace and a
  /// recorded program name the kernel so, and its online profile is keyed
  /// by it (plan::profile_key): give one name to one kernel of one shape.
  /// Without one the kernel is "kernel" (plan::unnamed_kernel). An empty or
  /// null name throws invalid_argument.
  template <typename... Args>
  void kernel(Args&&... name_groups_then_callable);

  /// Lets the policy run deferred work (paper: end of an iteration).
  void collect();
  /// A new iteration of the program begins: kernels are numbered from 0
  /// again and the policy hears of it (Policy::on_iteration_begin). The nn
  /// trainer calls it at every step; a program of its own calls it at the
  /// top of its loop.
  void begin_iteration();
  /// An iteration that is not the program's (a test pass between training
  /// epochs): kernels are numbered from 0 again, and the policy hears of it
  /// as such (Policy::on_unplanned_iteration_begin), so a policy that plans
  /// ahead places by its fallback until the next begin_iteration instead of
  /// calling it a departure from its plan.
  void begin_unplanned_iteration();
  /// Iterations begun so far (begin_iteration and begin_unplanned_iteration).
  [[nodiscard]] std::uint64_t iteration() const;
  /// Kernels (and scoped accesses) begun in the current iteration.
  [[nodiscard]] std::uint64_t kernels_in_iteration() const;

  /// Starts recording every event (see manager/trace.hpp); a new recording
  /// replaces the old one. Call before other threads use the runtime.
  Trace& start_trace();
  /// Stops recording; the recording stays readable through trace().
  void stop_trace();

  /// Gives the policy the program of an iteration (plan/program/program.hpp), for
  /// policies that plan ahead (Policy::on_program): from the nn trainer's
  /// dry run, or loaded from JSON.
  void set_program(plan::Program program);
  /// Records the next iteration — from the next begin_iteration() to the one
  /// after — and gives its program as set_program would: the way for a
  /// program without a dry run to plan its later iterations. Call it after
  /// the first iteration when that one differs from the rest (a program that
  /// makes some buffers lazily, on first use); the nn trainer's first is
  /// already its steady one. It uses the running trace if there is one, else
  /// a trace of its own that it drops once the program is made. The program
  /// carries this runtime's tiers (program_tiers of its devices), so that a
  /// model elsewhere (cachedarrays-plan --program) prices its copies at the
  /// tiers it ran on. A policy that asks for a program (Policy::
  /// records_program: the auto policy) gets the first iteration's this way
  /// when the program neither set nor recorded one before its first
  /// begin_iteration.
  void record_program();
  /// The program given or recorded, or null. Once its kernels are profiled
  /// (set_profile_iterations), the same program with their profiles
  /// (plan::Program::profiles): save it with plan::Program::save, and plan it
  /// elsewhere (cachedarrays-plan --program).
  [[nodiscard]] std::shared_ptr<const plan::Program> program() const;
  /// How many iterations (begin_iteration to begin_iteration) after a
  /// program without profiles is installed (set_program, record_program)
  /// the runtime times the program's kernel() kernels, with their arguments
  /// in whatever tiers they are (OnlineProfiler); at the begin_iteration
  /// after the last, the program gets their profiles and the policy hears
  /// of them (Policy::on_profiles). 0: none are timed. Takes effect at the
  /// next program installed. Kernels run through PinnedKernel directly (the
  /// nn trainer's, whose signatures have measured profiles) are not timed.
  void set_profile_iterations(std::uint32_t iterations);
  /// set_profile_iterations's default: a median of three runs per kernel.
  static constexpr std::uint32_t default_profile_iterations = KernelProfiling::default_iterations;
  /// Where program() is written as JSON (plan::Program::save) when the
  /// runtime is destroyed — with its online profiles once they are measured
  /// — for cachedarrays-plan --program; empty: nowhere (the default, unless
  /// CACHEDARRAYS_PROGRAM_OUT is set when the runtime is made). A runtime
  /// with no program and none being recorded then records the next
  /// iteration's (record_program). Every runtime given the path writes it,
  /// so with several in one process the last destroyed wins. The path must
  /// end in .json, else invalid_argument; a write that fails at destruction
  /// is reported on standard error, since a destructor cannot throw.
  void set_program_output(std::filesystem::path path);
  /// The recording, or null. Read it when no other thread uses the runtime.
  [[nodiscard]] const Trace* trace() const noexcept { return trace_.get(); }
  /// Device names, for trace exports.
  [[nodiscard]] std::vector<std::string> device_names() const;

  /// A consistent snapshot of the counters.
  [[nodiscard]] Stats stats() const;
  /// Every device's occupancy now (DataManager::usage), fastest first.
  [[nodiscard]] std::vector<DeviceUsage> usage() const;
  /// The policy's name, as the registry knows it ("first-touch", "ca-lm", ...).
  [[nodiscard]] std::string policy_name() const;
  /// Makes `next` the runtime's policy, handing it every object where it
  /// lies (policy::hand_over): the old policy's deferred retires end, copies
  /// in flight land, objects stay where they are, pinned ones stay pinned,
  /// and no byte changes. Meant for an iteration boundary: the new policy
  /// hears the program (on_program) now, when there is one, and follows it
  /// from the next begin_iteration; a kernel running on another thread
  /// across the switch may end under it. Reads that skip the lock ask the
  /// new policy from here on. Throws invalid_argument for a null policy.
  /// When `next`'s attach or adopt throws, first-touch takes every object
  /// (so the runtime stays usable and nothing is lost) and the exception
  /// is rethrown; what its on_program throws is rethrown with the switch
  /// made.
  policy::HandOver switch_policy(std::unique_ptr<policy::Policy> next);

  /// A memory snapshot of this moment (runtime/memory_snapshot.hpp) with the
  /// trace's last `trace_events` events; save it with write_memory_snapshot.
  /// It only reads: no byte and no placement changes. Safe from any thread,
  /// also from inside a kernel, whose arguments then show as pinned.
  [[nodiscard]] MemorySnapshot snapshot(std::size_t trace_events = default_snapshot_trace_events) const;
  /// Where an out_of_memory writes a snapshot of the moment before it is
  /// thrown; the file's path (or why it could not be written) ends the
  /// exception's message. Created when first needed. Empty (the default,
  /// unless CACHEDARRAYS_SNAPSHOT_DIR is set when the runtime is made): no
  /// snapshot. Throws invalid_argument for a path that exists and is not a
  /// directory.
  void set_snapshot_directory(std::filesystem::path directory);
  /// The snapshot directory; empty: none.
  [[nodiscard]] std::filesystem::path snapshot_directory() const;
  /// Where the leak report goes when this runtime is destroyed with objects
  /// the program never retired (write_leak_report); null: no report (the
  /// default, unless CACHEDARRAYS_LEAK_REPORT=1, which sends it to
  /// std::cerr). The stream must outlive the runtime.
  void set_leak_report(std::ostream* out);

  /// Direct access for policies' tests and tools. Not synchronised: hold
  /// lock() while using it if other threads use this runtime.
  [[nodiscard]] DataManager& manager() noexcept { return manager_; }
  /// The data manager, read-only; hold lock() as for manager().
  [[nodiscard]] const DataManager& manager() const noexcept { return manager_; }
  /// The placement policy; not synchronised either: hold lock() as for manager().
  [[nodiscard]] policy::Policy& policy() noexcept { return *policy_; }
  /// Takes the runtime's lock, the one every call that may move data takes
  /// inside.
  [[nodiscard]] Lock lock() { return Lock(*this); }

 private:
  void begin_iteration(bool planned);
  // The scoped accesses and kernels of CachedArray, kernel() and
  // PinnedKernel are the only ways in: they pair every pin with its unpin.
  template <typename T>
  friend class CachedArray;
  template <typename T, Access A>
  friend class ScopedAccess;
  friend class PinnedKernel;

  Object& create_object(std::uint64_t bytes);
  // Hands `hint` to the policy (retire: the object is handed over).
  void hint(Object& object, Hint hint);
  // Hints, pins and resolves the primary pointer of each object, all under
  // one lock acquisition: each is pinned before the next is hinted, so a
  // later hint cannot evict an earlier argument. On an exception every
  // object pinned so far is unpinned again. Traced as kernel `kernel`.
  // Returns the kernel's index in the iteration (Policy::on_kernel_begin).
  // `emulated_out`, when not null: the arguments are pinned under the lock
  // (so the index is the kernel's place in the iteration) and it receives
  // the emulated charge waited out.
  // tokens[i] receives where objects[i]'s pin is held, for its release.
  std::uint64_t acquire_all(Object* const* objects, const Access* accesses, std::byte** data, detail::PinToken* tokens,
                            std::size_t n, const char* kernel, double* emulated_out = nullptr);
  // Runtime::kernel once its name is settled.
  template <typename... Args>
  void run_kernel(const char* name, Args&&... groups_then_callable);
  // Whether kernel() kernels are timed now (one relaxed load).
  [[nodiscard]] bool profiling() const noexcept { return profiling_.on(); }
  // A timed kernel() ran `seconds` from before its pins to the end of its
  // callable, waiting out `emulated_ns` of them: hands its two times to the
  // profiler (KernelProfiling::add) under the lock. Its arguments are still
  // pinned.
  void profile_kernel(const char* name, std::uint64_t index, std::span<Object* const> objects,
                      std::span<const Access> accesses, double seconds, double emulated_ns);
  // Marks the end of the kernel `acquire_all` began (for the trace and
  // Policy::on_kernel_end).
  void end_kernel(const char* kernel, std::uint64_t index, std::span<Object* const> objects,
                  std::span<const Access> accesses);
  // Whether end_kernel has anything to do: checked inline by PinnedKernel,
  // so that a kernel under a policy that does not follow kernels, with no
  // trace, ends without a call into the library.
  [[nodiscard]] bool kernel_end_heard() const noexcept {
    return kernel_hooks_.load(std::memory_order_relaxed) || recording_on_.load(std::memory_order_acquire);
  }
  static void release(Object& object, Access access, detail::PinToken token) noexcept {
    DataManager::unpin(object, access, token);
  }
  void retire(Object& object);
  // Who gave a hint: the program (hint(), retire()), or a kernel's access
  // to an argument, which its kernel_begin trace event records (a replay
  // derives the hint from it).
  enum class HintSource { program, kernel_argument };
  // The one way a hint reaches the policy, under the lock: the injected
  // fault of tests (not for retire), the trace event of a program's hint,
  // the object's history, then the policy's handler.
  void dispatch_hint(Object& object, Hint hint, HintSource source);
  // Hint, pin (in a slot of thread number `thread` when one is free; token
  // says where), count; adds the emulated charge of the access to
  // emulated_ns.
  std::byte* acquire_locked(Object& object, Access access, std::size_t thread, detail::PinToken& token,
                            double& emulated_ns);
  // The accesses that skip the lock: pins every object and resolves its
  // primary without the lock when each object's policy answer allows it (a
  // write's also needs DataManager::writable_unlocked) and no lock holder
  // ran meanwhile; false, with nothing pinned or counted, when the lock is
  // needed.
  bool try_acquire_unlocked(Object* const* objects, const Access* accesses, std::byte** data, detail::PinToken* tokens,
                            std::size_t n, double& emulated_ns);
  // A will_read from the program that needs no lock: true when it was
  // deferred or is unneeded.
  bool try_hint_unlocked(Object& object);
  // Queues a deferred hint on `object` (Object::deferred_read or
  // deferred_write; each once until it is delivered).
  void defer_hint(Object& object, std::uint8_t hint);
  // Under the lock: gives the policy every deferred hint, oldest object
  // first, an object's will_read before its will_write.
  void deliver_deferred_hints();
  // Under the lock, after a hint or a placement: asks the policy how the
  // object's next will_read and will_write may come, while its answer is
  // under_lock.
  void refresh_hint_delivery(Object& object);
  // Under the lock, once policy_ is new: what the runtime asks a policy once
  // (follows_kernels, whether reads may skip the lock), and every object's
  // read delivery, asked anew.
  void adopt_policy_answers();
  // Under the lock: record_program's work.
  void start_program_recording();
  void record(TraceKind kind, const Object& object, std::uint8_t detail = 0);

  [[nodiscard]] MemorySnapshot snapshot_locked(SnapshotReason reason, std::uint64_t requested_bytes,
                                               std::size_t trace_events) const;
  // Where an out_of_memory's snapshot went, for its message.
  SnapshotDirectory::Written write_out_of_memory_snapshot(std::uint64_t requested_bytes) const;
  // What read_runtime_environment read, applied as the setters would.
  void apply_environment(const RuntimeEnvironment& env);
  [[nodiscard]] std::uint64_t ns_since_start() const noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_).count());
  }

  void install_program(std::shared_ptr<const plan::Program> program);
  // At a begin_iteration: hands over the program record_program recorded
  // once its iteration has ended.
  void finish_program_recording();

  // recording_ and recording_on_ together (under the lock).
  void set_recording(Trace* trace) noexcept {
    recording_ = trace;
    recording_on_.store(trace != nullptr, std::memory_order_release);
  }

  // What a Runtime owns. The lock, whose sequence also tells a read that
  // pins without it whether a holder ran meanwhile: one that finds it even
  // and unchanged after its pins knows that none did, and every later holder
  // sees its pins (both sides store before they load, seq_cst).
  alignas(128) mutable PlacementLock placement_;
  // Objects whose deferred will_read waits for the next Lock, newest first
  // (through Object::next_deferred_).
  alignas(128) std::atomic<Object*> deferred_reads_{nullptr};
  // Kernels and scoped accesses that skipped the lock, per thread; at the
  // start of the iteration their sum was unlocked_kernels_base_.
  ThreadStripes<1> unlocked_kernels_;
  std::uint64_t unlocked_kernels_base_ = 0;
  // Whether reads may skip the lock at all: the policy does not follow
  // kernels (whose positions are counted under the lock), and no faults are
  // injected (their sites are under the lock).
  // Changed only under the lock (switch_policy), read without it by reads.
  std::atomic<bool> unlocked_reads_{false};
  // How often Lock was taken and how long it was held (Stats::lock);
  // written by the lock's holder.
  LockCounters lock_counters_;
  // The heaps and objects (the mechanism) and the policy, destroyed first.
  DataManager manager_;
  std::unique_ptr<policy::Policy> policy_;
  // policy_->name(), kept apart so that policy_name() needs neither the
  // runtime's lock (a caller may hold it) nor policy_, which a switch replaces.
  mutable std::mutex policy_name_mutex_;
  std::string policy_name_;
  // policy_->follows_kernels(), asked when the policy comes; read without
  // the lock at a kernel's end.
  std::atomic<bool> kernel_hooks_{true};
  // The policy's answers_version() when its answers were last cached.
  std::uint64_t policy_answers_version_ = 0;
  // Where the program is: iterations begun, kernels begun in this one, and
  // the clock of snapshots' ages.
  std::uint64_t iteration_ = 0;
  std::uint64_t kernel_index_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // The trace: the recording, trace_ while it records (else null), whether
  // it records, readable without the lock (a kernel's end takes the lock
  // only when it has something to do), and its file, written at destruction
  // when not empty.
  std::unique_ptr<Trace> trace_;
  Trace* recording_ = nullptr;
  std::atomic<bool> recording_on_{false};
  std::filesystem::path trace_file_;
  // The program given or recorded, and the collaborators: its recording and
  // output, its kernels' online profiles, the out_of_memory snapshots and the
  // leak report.
  std::shared_ptr<const plan::Program> program_;
  ProgramRecorder recorder_;
  KernelProfiling profiling_;
  SnapshotDirectory snapshot_directory_;
  LeakReport leak_report_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/runtime-inl.hpp"
#include "cachedarrays/runtime/unlocked_access-inl.hpp"
#endif
