// Which stores this process copies with, as a value a tool or a benchmark
// can print: the copy engine measures non-temporal stores against memcpy on
// this CPU (or takes CACHEDARRAYS_COPY's word), and this says what it chose
// per size band, from which figures, and why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/config.hpp"

namespace cachedarrays {

/// The choice for one band of copy sizes.
struct CopyBandReport {
  std::string band;                   ///< "small", "medium" or "large".
  std::uint64_t min_bytes = 0;        ///< The smallest copy in the band.
  std::uint64_t end_bytes = 0;        ///< One past the largest copy in the band (0: no end).
  std::uint64_t sample_bytes = 0;     ///< The size the calibration timed (0: not timed).
  std::string path;                   ///< Stores of a copy on one thread: "nt" or "memcpy".
  bool split = true;                  ///< Whether copies large enough are split over threads.
  std::string split_path;             ///< Stores of the chunks of a split copy: "nt" or "memcpy".
  double memcpy_gbps = 0;             ///< Measured GB/s of memcpy on one thread (0: not measured).
  double nontemporal_gbps = 0;        ///< Measured GB/s of non-temporal stores on one thread.
  double memcpy_split_gbps = 0;       ///< Measured GB/s of memcpy split over threads.
  double nontemporal_split_gbps = 0;  ///< Measured GB/s of non-temporal stores split over threads.
  std::string why;                    ///< The figures the choice rests on, for people.
};

/// What the copy engine chose for this process.
struct CopyPathReport {
  std::string mode;                       ///< CACHEDARRAYS_COPY: "auto" (measured), "nt" or "memcpy".
  std::string nontemporal_isa;            ///< The vector path of the non-temporal stores: avx512, avx2 or sse2.
  std::uint64_t always_memcpy_below = 0;  ///< Copies smaller than this are one memcpy, whatever the choice.
  std::vector<CopyBandReport> bands;      ///< Smallest band first.
  double calibration_seconds = 0;         ///< Wall time the calibration took (0 unless mode is auto).
  std::uint64_t calibration_bytes = 0;    ///< Bytes the calibration copied.
  std::string calibration_note;           ///< Why the calibration measured less than it meant to, if it did.

  /// One line: the mode and each band's choice, e.g. "auto: small nt, medium
  /// memcpy split, large memcpy split (nt avx2)".
  [[nodiscard]] std::string summary() const;
};

/// The choice, made now if no copy has made it yet (in auto mode that
/// measures for a few milliseconds), in the mode CACHEDARRAYS_COPY gave
/// (apply_process_environment, runtime/environment.hpp). Thread-safe.
[[nodiscard]] const CopyPathReport& copy_path_report();

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/copy_path-inl.hpp"
#endif
