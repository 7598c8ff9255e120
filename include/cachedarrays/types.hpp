// The bottom of the layers (docs/design.md "Layout ... and the layers"): the few
// names every layer shares — device numbers, the two kinds of access, the
// hints a program gives, and byte formatting for messages. It includes
// nothing of the library, so any layer may include it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cachedarrays {

/// A device (memory tier) of a runtime or manager, numbered from 0, the fastest.
using DeviceId = std::uint32_t;

/// The most devices one manager handles; a fixed bound keeps an object's
/// per-device region table inline (no allocation per object).
inline constexpr DeviceId max_devices = 8;

/// A device's bandwidths for modeled time, in GB/s (= bytes per ns).
struct DeviceModel {
  std::string name;       ///< the tier's name ("dram", "optane", ...), for messages and prices
  double read_gbps = 0;   ///< read bandwidth, GB/s (> 0 to replay)
  double write_gbps = 0;  ///< write bandwidth, GB/s (> 0 to replay)
};

/// How a kernel or scoped access uses an object: `read` leaves the object's
/// copies valid; `write` (which may also read) makes the primary dirty.
enum class Access { read, write };

/// What the program says about its future use of an object (paper Table II):
/// `will_use`, `will_read`, `will_write` (about to be used, read, written),
/// `archive` (not needed for a while) and `retire` (never needed again).
/// Every hint but `retire` only changes speed; a wrong `retire` loses data.
enum class Hint : std::uint8_t { will_use, will_read, will_write, archive, retire };

/// How a will_read hint may reach a policy when the thread that gives it does
/// not hold the runtime's lock (Policy::read_hint_delivery). A read on an
/// object that does not move need not wait for the lock, and threads reading
/// their own arrays then do not serialise on it.
enum class HintDelivery : std::uint8_t {
  under_lock,  ///< At once, under the runtime's lock (the default).
  deferred,    ///< Under the lock, before the runtime's next locked call; repeated hints on one object arrive as one.
  unneeded,    ///< Not at all: the policy does nothing with the hint on this object as it stands.
};

/// The hint's name ("will_use", ...): the one table of hint names, which
/// traces, messages and command lines use.
[[nodiscard]] constexpr const char* to_string(Hint hint) noexcept {
  switch (hint) {
    case Hint::will_use: return "will_use";
    case Hint::will_read: return "will_read";
    case Hint::will_write: return "will_write";
    case Hint::archive: return "archive";
    case Hint::retire: return "retire";
  }
  return "?";
}

/// `bytes` as every message of the library writes a size: "512 B" below
/// 1 KiB, else two decimals of the largest binary unit ("1.50 GiB").
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

/// A size as a person writes it: "1073741824", "512MiB", "1.5 GiB", "8G".
/// Units (any case): B; KiB MiB GiB TiB and K M G T are powers of 1024;
/// KB MB GB TB powers of 1000. A fraction of a byte rounds down.
/// format_bytes' output reads back (to its two decimals). nullopt for
/// anything else: no number, a negative one, an unknown unit, or more than
/// 2^64 - 1 bytes.
[[nodiscard]] std::optional<std::uint64_t> parse_bytes(std::string_view text);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/types-inl.hpp"
#endif
