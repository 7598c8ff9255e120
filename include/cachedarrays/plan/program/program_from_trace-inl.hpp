// Program::from_trace (program.hpp): the one conversion of a recorded trace
// into the program planners walk, in one pass over the iteration's events.
// Header-only mode includes it from program.hpp; the compiled library from
// src/plan/plan.cpp.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/program.hpp"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

namespace detail {

// Reads one iteration of a trace into a program. Objects are named as they
// are met: the persistent ones (used, not created, by the iteration) in
// order of first use, the created ones in creation order; the persistent
// ones are put first once the iteration has been read (program.hpp's
// numbering).
class ProgramTraceReader {
 public:
  explicit ProgramTraceReader(const Trace& trace) : trace_(trace), events_(trace.events()) {}

  Program read(std::optional<std::uint64_t> iteration) {
    const std::size_t marker = find_iteration(iteration);
    objects_before(marker);
    std::size_t i = marker + 1;
    for (; i < events_.size() && events_[i].kind != TraceKind::iteration; ++i) read_event(i);
    return finish();
  }

 private:
  // A name given while reading: persistent objects and created ones are
  // numbered apart until finish() puts the persistent ones first.
  struct Name {
    bool persistent = false;
    std::uint32_t index = 0;
  };

  [[noreturn]] static void fail(const std::string& what) {
    throw invalid_argument("cachedarrays: program from trace: " + what);
  }

  // The index of the iteration event that opens the iteration asked for
  // (the last one without a number).
  std::size_t find_iteration(std::optional<std::uint64_t> iteration) const {
    std::size_t marker = events_.size();
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (events_[i].kind != TraceKind::iteration) continue;
      if (!iteration || events_[i].object == *iteration) marker = i;
      if (iteration && events_[i].object == *iteration) break;
    }
    if (marker == events_.size()) {
      fail(iteration ? "the trace holds no iteration " + std::to_string(*iteration)
                     : std::string("the trace marks no iteration; call Runtime::begin_iteration at the top of each "
                                   "iteration while recording (the nn trainer does)"));
    }
    return marker;
  }

  // What happened to each object before the iteration: created and alive
  // (true) or retired (false), and the size it was created with (a
  // persistent object's first use may touch only part of it).
  void objects_before(std::size_t marker) {
    for (std::size_t i = 0; i < marker; ++i) {
      const TraceEvent& e = events_[i];
      if (e.kind == TraceKind::create) {
        alive_before_[e.object] = true;
        created_bytes_[e.object] = e.bytes;
      }
      if (e.kind == TraceKind::retire) alive_before_[e.object] = false;
    }
  }

  // The name of an object the event at `at` uses; its first use names a
  // persistent object, the same whether or not the trace saw it created
  // (Runtime::record_program starts recording after them).
  Name use(std::uint64_t id, std::uint64_t bytes, std::size_t at) {
    if (const auto it = names_.find(id); it != names_.end()) return it->second;
    if (const auto it = alive_before_.find(id); it != alive_before_.end() && !it->second) {
      fail("event " + std::to_string(at) + " uses object #" + std::to_string(id) +
           ", retired before the iteration began");
    }
    const auto created = created_bytes_.find(id);
    const Name name{true, static_cast<std::uint32_t>(persistent_.size())};
    persistent_.push_back({created != created_bytes_.end() ? created->second : bytes, true});
    names_.emplace(id, name);
    return name;
  }

  void read_event(std::size_t i) {
    const TraceEvent& e = events_[i];
    switch (e.kind) {
      case TraceKind::create: {
        if (names_.contains(e.object) || alive_before_.contains(e.object)) {
          fail("event " + std::to_string(i) + " creates object #" + std::to_string(e.object) + " a second time");
        }
        const Name name{false, static_cast<std::uint32_t>(created_.size())};
        created_.push_back({e.bytes, false});
        names_.emplace(e.object, name);
        steps_.push_back({{StepKind::create}, name});
        break;
      }
      case TraceKind::retire: steps_.push_back({{StepKind::retire}, use(e.object, e.bytes, i)}); break;
      case TraceKind::hint: {
        const Name name = use(e.object, e.bytes, i);
        steps_.push_back({{StepKind::hint, 0, static_cast<Hint>(e.detail)}, name});
        break;
      }
      case TraceKind::kernel_begin: read_kernel(e, i); break;
      case TraceKind::collect: steps_.push_back({{StepKind::collect}, {}}); break;
      default: break;  // kernel ends and the mechanism's events are not the program's
    }
  }

  void read_kernel(const TraceEvent& e, std::size_t i) {
    ProgramKernel k{trace_.names().at(e.name), {}};
    std::vector<Name> args;
    for (std::uint32_t a = 0; a < e.arg_count; ++a) {
      const TraceArg& arg = trace_.args()[e.arg_begin + a];
      args.push_back(use(arg.object, arg.bytes, i));
      k.args.push_back({0, arg.bytes, arg.write ? Access::write : Access::read});
    }
    kernel_args_.push_back(std::move(args));
    steps_.push_back({{StepKind::kernel, static_cast<std::uint32_t>(kernels_.size())}, {}});
    kernels_.push_back(std::move(k));
  }

  // The program, the persistent objects numbered first.
  Program finish() {
    const auto number = [&](Name n) {
      return n.persistent ? n.index : static_cast<std::uint32_t>(persistent_.size()) + n.index;
    };
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      for (std::size_t a = 0; a < kernel_args_[k].size(); ++a) kernels_[k].args[a].object = number(kernel_args_[k][a]);
    }
    std::vector<ProgramStep> steps;
    for (auto& [step, name] : steps_) {
      if (step.kind != StepKind::kernel && step.kind != StepKind::collect) step.index = number(name);
      steps.push_back(step);
    }
    std::vector<ProgramObject> objects = std::move(persistent_);
    objects.insert(objects.end(), created_.begin(), created_.end());
    return Program(std::move(objects), std::move(kernels_), std::move(steps));
  }

  const Trace& trace_;
  const std::vector<TraceEvent>& events_;
  std::unordered_map<std::uint64_t, bool> alive_before_;
  std::unordered_map<std::uint64_t, std::uint64_t> created_bytes_;
  std::unordered_map<std::uint64_t, Name> names_;  // trace id -> its name here
  std::vector<ProgramObject> persistent_, created_;
  std::vector<ProgramKernel> kernels_;
  std::vector<std::vector<Name>> kernel_args_;       // by kernel: its arguments' names
  std::vector<std::pair<ProgramStep, Name>> steps_;  // a step and the object it names
};

}  // namespace detail

CACHEDARRAYS_INLINE Program Program::from_trace(const Trace& trace, std::optional<std::uint64_t> iteration) {
  return detail::ProgramTraceReader(trace).read(iteration);
}

}  // namespace cachedarrays::plan
