// Implementation of program_recorder.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/program_recorder.hpp"

#include <cstdio>
#include <exception>
#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE bool ProgramRecorder::ask_once(bool planned, bool installed) noexcept {
  const bool ask = planned && !asked_ && !installed && !pending_;
  asked_ = true;
  return ask;
}

CACHEDARRAYS_INLINE std::shared_ptr<const plan::Program> ProgramRecorder::finish(const Trace& trace,
                                                                                 std::vector<plan::ProgramTier> tiers) {
  const std::uint64_t first = first_;
  pending_ = false;
  plan::Program recorded = plan::Program::from_trace(trace, first);
  recorded.set_tiers(std::move(tiers));
  return std::make_shared<const plan::Program>(std::move(recorded));
}

CACHEDARRAYS_INLINE std::filesystem::path ProgramRecorder::checked_output(std::filesystem::path path) {
  if (!path.empty() && path.extension() != ".json") {
    throw invalid_argument("cachedarrays: program output '" + path.string() +
                           "' must end in .json (plan::Program JSON), or be empty for none");
  }
  return path;
}

CACHEDARRAYS_INLINE void ProgramRecorder::write_output(const plan::Program* program) const noexcept {
  if (output_.empty()) return;
  if (program == nullptr) {
    std::fprintf(stderr,
                 "cachedarrays: no program was written to %s: none was recorded (record_program needs two "
                 "begin_iteration calls, one at the top of each iteration)\n",
                 output_.string().c_str());
    return;
  }
  try {
    program->save(output_.string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cachedarrays: the program was not written: %s\n", e.what());
  }
}

}  // namespace cachedarrays
