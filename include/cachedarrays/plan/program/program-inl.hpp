// Implementation of program.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/program.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/json_reader.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE const char* to_string(StepKind kind) noexcept {
  switch (kind) {
    case StepKind::create: return "create";
    case StepKind::retire: return "retire";
    case StepKind::hint: return "hint";
    case StepKind::kernel: return "kernel";
    case StepKind::collect: return "collect";
  }
  return "?";
}

CACHEDARRAYS_INLINE Program::Program(std::vector<ProgramObject> objects, std::vector<ProgramKernel> kernels,
                                     std::vector<ProgramStep> steps)
    : objects_(std::move(objects)), kernels_(std::move(kernels)), steps_(std::move(steps)) {
  validate_and_index();
}

CACHEDARRAYS_INLINE void Program::validate_and_index() {
  const auto fail = [](const std::string& what) { throw invalid_argument("cachedarrays: program: " + what); };
  enum class Life : std::uint8_t { unborn, alive, retired };
  std::vector<Life> life(objects_.size(), Life::unborn);
  std::uint64_t live = 0;
  for (std::size_t i = 0; i < objects_.size(); ++i) {
    if (objects_[i].bytes == 0) fail("object " + std::to_string(i) + " has 0 bytes; every object has a size");
    if (objects_[i].persistent) {
      life[i] = Life::alive;
      live += objects_[i].bytes;
    }
  }
  uses_.assign(objects_.size(), {});
  live_bytes_.assign(kernels_.size(), 0);
  std::uint32_t next_kernel = 0;
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    const ProgramStep& step = steps_[s];
    const std::string where = "step " + std::to_string(s) + " (" + to_string(step.kind) + ")";
    const auto object_alive = [&](std::uint32_t o, const std::string& role) {
      if (o >= objects_.size()) {
        fail(where + ": " + role + " " + std::to_string(o) + " is out of range; the program has " +
             std::to_string(objects_.size()) + " objects");
      }
      if (life[o] == Life::unborn) fail(where + ": object " + std::to_string(o) + " is used before it is created");
      if (life[o] == Life::retired) fail(where + ": object " + std::to_string(o) + " is used after it is retired");
    };
    switch (step.kind) {
      case StepKind::create:
        if (step.index >= objects_.size()) {
          fail(where + ": object " + std::to_string(step.index) + " is out of range; the program has " +
               std::to_string(objects_.size()) + " objects");
        }
        if (life[step.index] != Life::unborn) {
          fail(where + ": object " + std::to_string(step.index) +
               (objects_[step.index].persistent ? " is persistent (alive before the iteration), so it is not created"
                                                : " is created twice"));
        }
        life[step.index] = Life::alive;
        live += objects_[step.index].bytes;
        break;
      case StepKind::retire:
        object_alive(step.index, "object");
        life[step.index] = Life::retired;
        live -= objects_[step.index].bytes;
        break;
      case StepKind::hint:
        object_alive(step.index, "object");
        if (step.hint == Hint::retire) fail(where + ": retire is a step of its own, not a hint");
        break;
      case StepKind::kernel: {
        if (step.index != next_kernel) {
          fail(where + ": kernel " + std::to_string(step.index) + " out of order; kernel " +
               std::to_string(next_kernel) + " comes next (kernels run once each, in index order)");
        }
        if (step.index >= kernels_.size()) {
          fail(where + ": kernel " + std::to_string(step.index) + " is out of range; the program has " +
               std::to_string(kernels_.size()) + " kernels");
        }
        for (const ProgramArg& a : kernels_[step.index].args) {
          object_alive(a.object, "argument object");
          if (a.bytes == 0 || a.bytes > objects_[a.object].bytes) {
            fail(where + ": an argument of " + std::to_string(a.bytes) + " bytes on object " +
                 std::to_string(a.object) + " of " + std::to_string(objects_[a.object].bytes) +
                 " bytes; an argument covers 1 byte to the whole object");
          }
          std::vector<std::uint32_t>& u = uses_[a.object];
          if (u.empty() || u.back() != step.index) u.push_back(step.index);
        }
        live_bytes_[step.index] = live;
        ++next_kernel;
        break;
      }
      case StepKind::collect: break;
    }
  }
  if (next_kernel != kernels_.size()) {
    fail("the steps run " + std::to_string(next_kernel) + " of the " + std::to_string(kernels_.size()) +
         " kernels; each kernel needs a kernel step");
  }
}

CACHEDARRAYS_INLINE std::optional<std::string> Program::unrepeatable() const {
  std::vector<bool> created(objects_.size(), false), retired(objects_.size(), false);
  for (const ProgramStep& step : steps_) {
    if (step.kind == StepKind::create) created[step.index] = true;
    if (step.kind == StepKind::retire) retired[step.index] = true;
  }
  for (std::uint32_t o = 0; o < objects_.size(); ++o) {
    if (objects_[o].persistent && retired[o]) return "persistent object " + std::to_string(o) + " is retired";
    if (created[o] && !retired[o]) return "object " + std::to_string(o) + " is created and not retired";
  }
  return std::nullopt;
}

CACHEDARRAYS_INLINE Trace Program::to_trace(std::uint32_t iterations) const {
  if (iterations == 0) throw invalid_argument("cachedarrays: Program::to_trace: 0 iterations; give 1 or more");
  if (iterations > 1) {
    if (const auto why = unrepeatable()) {
      throw invalid_argument("cachedarrays: Program::to_trace: the iteration cannot repeat (" + *why +
                             "): a repeated iteration must retire every object it creates and no persistent one");
    }
  }
  Trace trace;
  // Each iteration's own objects get their own ids (a trace never reuses
  // one): object k of iteration i is k + 1 + (i - 1) * objects().size();
  // persistent objects are the same in every iteration.
  std::uint64_t shift = 0;
  const auto id = [&](std::uint32_t object) -> std::uint64_t {
    return std::uint64_t{object} + 1 + (objects_[object].persistent ? 0 : shift);
  };
  // Hints and retires carry the object's size: from_trace sizes a
  // persistent object from its first use, which may be one of them.
  const auto event = [&](TraceKind kind, std::uint32_t object, std::uint8_t detail = 0) {
    TraceEvent e;
    e.kind = kind;
    e.object = id(object);
    e.bytes = objects_[object].bytes;
    e.detail = detail;
    trace.record(e);
  };
  for (std::uint32_t o = 0; o < objects_.size(); ++o) {
    if (objects_[o].persistent) event(TraceKind::create, o);
  }
  std::vector<TraceArg> args;
  for (std::uint32_t i = 1; i <= iterations; ++i) {
    shift = std::uint64_t{i - 1} * objects_.size();
    TraceEvent iteration;
    iteration.kind = TraceKind::iteration;
    iteration.object = i;
    trace.record(iteration);
    for (const ProgramStep& step : steps_) {
      switch (step.kind) {
        case StepKind::create: event(TraceKind::create, step.index); break;
        case StepKind::retire: event(TraceKind::retire, step.index); break;
        case StepKind::hint: event(TraceKind::hint, step.index, static_cast<std::uint8_t>(step.hint)); break;
        case StepKind::collect: {
          TraceEvent e;
          e.kind = TraceKind::collect;
          trace.record(e);
          break;
        }
        case StepKind::kernel: {
          const ProgramKernel& k = kernels_[step.index];
          args.clear();
          for (const ProgramArg& a : k.args) args.push_back({id(a.object), a.bytes, a.access == Access::write, 0});
          const std::uint32_t name = trace.record_kernel(k.name, args);
          // A scoped read()/write() access has no end event (trace.hpp).
          if (k.name != scoped_access_kernel(Access::read) && k.name != scoped_access_kernel(Access::write)) {
            TraceEvent end;
            end.kind = TraceKind::kernel_end;
            end.name = name;
            trace.record(end);
          }
          break;
        }
      }
    }
  }
  return trace;
}

// ---- queries -----------------------------------------------------------------

CACHEDARRAYS_INLINE const std::vector<std::uint32_t>& Program::uses(std::uint32_t object) const {
  if (object >= uses_.size()) {
    throw invalid_argument("cachedarrays: program: object " + std::to_string(object) + " is out of range; it has " +
                           std::to_string(uses_.size()) + " objects");
  }
  return uses_[object];
}

CACHEDARRAYS_INLINE std::optional<std::uint32_t> Program::next_use(std::uint32_t object, std::uint32_t after) const {
  const std::vector<std::uint32_t>& u = uses(object);
  const auto it = std::upper_bound(u.begin(), u.end(), after);
  if (it == u.end()) return std::nullopt;
  return *it;
}

CACHEDARRAYS_INLINE std::optional<std::uint32_t> Program::first_use(std::uint32_t object) const {
  const std::vector<std::uint32_t>& u = uses(object);
  if (u.empty()) return std::nullopt;
  return u.front();
}

CACHEDARRAYS_INLINE std::optional<std::uint32_t> Program::last_use(std::uint32_t object) const {
  const std::vector<std::uint32_t>& u = uses(object);
  if (u.empty()) return std::nullopt;
  return u.back();
}

CACHEDARRAYS_INLINE std::uint64_t Program::max_live() const noexcept {
  return live_bytes_.empty() ? 0 : *std::max_element(live_bytes_.begin(), live_bytes_.end());
}

CACHEDARRAYS_INLINE std::uint64_t Program::total_bytes() const noexcept {
  std::uint64_t sum = 0;
  for (const ProgramObject& o : objects_) sum += o.bytes;
  return sum;
}

CACHEDARRAYS_INLINE void Program::set_tiers(std::vector<ProgramTier> tiers) {
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const ProgramTier& t = tiers[i];
    for (const auto& [what, value] : {std::pair{"read_gbps", t.read_gbps}, std::pair{"write_gbps", t.write_gbps},
                                      std::pair{"latency_ns", t.latency_ns}}) {
      if (!std::isfinite(value) || value < 0) {
        std::ostringstream figure;
        figure << value;
        throw invalid_argument("cachedarrays: Program::set_tiers: tier " + std::to_string(i) + " ('" + t.name +
                               "'): " + what + " is " + figure.str() + "; give a finite figure >= 0 (0: not known)");
      }
    }
  }
  tiers_ = std::move(tiers);
}

// ---- JSON --------------------------------------------------------------------

namespace detail {

inline constexpr const char* program_format = "cachedarrays-program";
inline constexpr int program_version = 1;

}  // namespace detail

CACHEDARRAYS_INLINE std::string Program::to_json() const {
  nlohmann::json j;
  j["format"] = detail::program_format;
  j["version"] = detail::program_version;
  nlohmann::json& objects = j["objects"] = nlohmann::json::array();
  for (const ProgramObject& o : objects_) objects.push_back({{"bytes", o.bytes}, {"persistent", o.persistent}});
  nlohmann::json& kernels = j["kernels"] = nlohmann::json::array();
  for (const ProgramKernel& k : kernels_) {
    nlohmann::json args = nlohmann::json::array();
    for (const ProgramArg& a : k.args) args.push_back({a.object, a.bytes, a.access == Access::write ? "w" : "r"});
    kernels.push_back({{"name", k.name}, {"args", std::move(args)}});
  }
  nlohmann::json& steps = j["steps"] = nlohmann::json::array();
  for (const ProgramStep& s : steps_) {
    nlohmann::json step = {to_string(s.kind)};
    if (s.kind != StepKind::collect) step.push_back(s.index);
    if (s.kind == StepKind::hint) step.push_back(to_string(s.hint));
    steps.push_back(std::move(step));
  }
  if (profiles_) j["profiles"] = nlohmann::json::parse(profiles_->to_json());
  if (!tiers_.empty()) {
    nlohmann::json& tiers = j["tiers"] = nlohmann::json::array();
    for (const ProgramTier& t : tiers_) {
      tiers.push_back({{"name", t.name},
                       {"device", t.device},
                       {"read_gbps", t.read_gbps},
                       {"write_gbps", t.write_gbps},
                       {"latency_ns", t.latency_ns},
                       {"emulated", t.emulated}});
    }
  }
  return j.dump(1);
}

CACHEDARRAYS_INLINE Program Program::from_json(const std::string& text) {
  const cachedarrays::detail::JsonReader r("program JSON");
  const nlohmann::json j = r.parse(text);
  if (r.string(r.field(j, "(document)", "format"), "format") != detail::program_format) {
    r.fail("format", std::string("must be \"") + detail::program_format + "\"");
  }
  if (r.unsigned_int(r.field(j, "(document)", "version"), "version") != detail::program_version) {
    r.fail("version", "must be " + std::to_string(detail::program_version) + " (this library's program format)");
  }
  std::vector<ProgramObject> objects;
  const nlohmann::json& jo = r.array(r.field(j, "(document)", "objects"), "objects");
  for (std::size_t i = 0; i < jo.size(); ++i) {
    const std::string path = "objects[" + std::to_string(i) + "]";
    objects.push_back({r.unsigned_int(r.field(jo[i], path, "bytes"), path + ".bytes"),
                       r.boolean(r.field(jo[i], path, "persistent"), path + ".persistent")});
  }
  std::vector<ProgramKernel> kernels;
  const nlohmann::json& jk = r.array(r.field(j, "(document)", "kernels"), "kernels");
  for (std::size_t i = 0; i < jk.size(); ++i) {
    const std::string path = "kernels[" + std::to_string(i) + "]";
    ProgramKernel k{r.string(r.field(jk[i], path, "name"), path + ".name"), {}};
    const nlohmann::json& ja = r.array(r.field(jk[i], path, "args"), path + ".args");
    for (std::size_t a = 0; a < ja.size(); ++a) {
      const std::string apath = path + ".args[" + std::to_string(a) + "]";
      if (!ja[a].is_array() || ja[a].size() != 3) r.fail(apath, "must be [object, bytes, \"r\" or \"w\"]");
      const std::string access = r.string(ja[a][2], apath + "[2]");
      if (access != "r" && access != "w") r.fail(apath + "[2]", "must be \"r\" or \"w\", not \"" + access + "\"");
      k.args.push_back({r.index(ja[a][0], apath + "[0]"), r.unsigned_int(ja[a][1], apath + "[1]"),
                        access == "w" ? Access::write : Access::read});
    }
    kernels.push_back(std::move(k));
  }
  std::vector<ProgramStep> steps;
  const nlohmann::json& js = r.array(r.field(j, "(document)", "steps"), "steps");
  for (std::size_t i = 0; i < js.size(); ++i) {
    const std::string path = "steps[" + std::to_string(i) + "]";
    if (!js[i].is_array() || js[i].empty()) r.fail(path, "must be an array [kind, index(, hint)]");
    const std::string kind = r.string(js[i][0], path + "[0]");
    ProgramStep step;
    std::size_t size = 2;
    if (kind == "create")
      step.kind = StepKind::create;
    else if (kind == "retire")
      step.kind = StepKind::retire;
    else if (kind == "hint") {
      step.kind = StepKind::hint;
      size = 3;
    } else if (kind == "kernel")
      step.kind = StepKind::kernel;
    else if (kind == "collect") {
      step.kind = StepKind::collect;
      size = 1;
    } else
      r.fail(path + "[0]", "unknown step kind \"" + kind + "\"; one of create, retire, hint, kernel, collect");
    if (js[i].size() != size) r.fail(path, "a " + kind + " step has " + std::to_string(size) + " entries");
    if (size >= 2) step.index = r.index(js[i][1], path + "[1]");
    if (size == 3) {
      const std::string hint = r.string(js[i][2], path + "[2]");
      bool found = false;
      for (Hint h : {Hint::will_use, Hint::will_read, Hint::will_write, Hint::archive}) {
        if (hint == to_string(h)) {
          step.hint = h;
          found = true;
        }
      }
      if (!found)
        r.fail(path + "[2]", "unknown hint \"" + hint + "\"; one of will_use, will_read, will_write, archive");
    }
    steps.push_back(step);
  }
  std::optional<KernelProfiles> profiles;
  if (const auto it = j.find("profiles"); it != j.end()) {
    try {
      profiles = KernelProfiles::from_json(it->dump());
    } catch (const invalid_argument& e) {
      r.fail("profiles", std::string(e.what()) + " (the online profiles of the program's kernels)");
    }
  }
  std::vector<ProgramTier> tiers;
  if (const auto it = j.find("tiers"); it != j.end()) {
    const nlohmann::json& jt = r.array(*it, "tiers");
    for (std::size_t i = 0; i < jt.size(); ++i) {
      const std::string path = "tiers[" + std::to_string(i) + "]";
      const auto figure = [&](const char* key) { return r.non_negative(r.field(jt[i], path, key), path + "." + key); };
      tiers.push_back({.name = r.string(r.field(jt[i], path, "name"), path + ".name"),
                       .device = r.string(r.field(jt[i], path, "device"), path + ".device"),
                       .read_gbps = figure("read_gbps"),
                       .write_gbps = figure("write_gbps"),
                       .latency_ns = figure("latency_ns"),
                       .emulated = r.boolean(r.field(jt[i], path, "emulated"), path + ".emulated")});
    }
  }
  try {
    Program program(std::move(objects), std::move(kernels), std::move(steps));
    program.profiles_ = std::move(profiles);
    program.tiers_ = std::move(tiers);
    if (std::optional<std::string> problem = program.naming_problem()) {
      r.fail("objects", *problem +
                            "; a program numbers the persistent objects first, in the order the "
                            "iteration first uses them (a kernel argument, a hint or a retire), then the objects it "
                            "creates, in creation order, and leaves out persistent objects it never uses (as "
                            "Program::from_trace and Program::save write it)");
    }
    return program;
  } catch (const invalid_argument& e) {
    r.fail("(document)", e.what());
  }
}

CACHEDARRAYS_INLINE std::optional<std::string> Program::naming_problem() const {
  const auto n = static_cast<std::uint32_t>(objects_.size());
  std::uint32_t persistent = 0;
  while (persistent < n && objects_[persistent].persistent) ++persistent;
  for (std::uint32_t o = persistent; o < n; ++o) {
    if (objects_[o].persistent) {
      return "object " + std::to_string(o) + " is persistent but follows object " + std::to_string(persistent) +
             ", which the iteration creates";
    }
  }
  std::uint32_t next_used = 0;  // the persistent object whose first use comes next
  std::uint32_t next_created = persistent;
  std::vector<bool> used(persistent, false);
  const auto use = [&](std::uint32_t o) -> std::optional<std::string> {
    if (o >= persistent || used[o]) return std::nullopt;
    if (o != next_used) {
      return "persistent object " + std::to_string(o) + " is first used before persistent object " +
             std::to_string(next_used);
    }
    used[o] = true;
    ++next_used;
    return std::nullopt;
  };
  for (const ProgramStep& step : steps_) {
    std::optional<std::string> problem;
    switch (step.kind) {
      case StepKind::create:
        if (step.index != next_created) {
          return "object " + std::to_string(step.index) + " is created before object " + std::to_string(next_created);
        }
        ++next_created;
        break;
      case StepKind::retire:
      case StepKind::hint: problem = use(step.index); break;
      case StepKind::kernel:
        for (const ProgramArg& a : kernels_[step.index].args) {
          if ((problem = use(a.object))) break;
        }
        break;
      case StepKind::collect: break;
    }
    if (problem) return problem;
  }
  if (next_used < persistent) {
    return "persistent object " + std::to_string(next_used) + " is never used by the iteration";
  }
  if (next_created < n) return "object " + std::to_string(next_created) + " is neither persistent nor created";
  return std::nullopt;
}

CACHEDARRAYS_INLINE void Program::save(const std::string& path) const {
  cachedarrays::detail::write_json_file(path, to_json(), "the program");
}

CACHEDARRAYS_INLINE Program Program::load(const std::string& path) {
  return cachedarrays::detail::read_json_file(path, "program", [](const std::string& text) { return from_json(text); });
}

}  // namespace cachedarrays::plan
