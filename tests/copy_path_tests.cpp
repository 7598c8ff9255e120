// The copy engine's choice of stores: the pure decision from timings (the
// faster path wins each band by a margin, a near tie keeps the incumbent),
// the calibration's bounded cost, CACHEDARRAYS_COPY's forcing and refusal,
// and the report tools print. Whether each path copies exactly is
// copy_engine_tests.cpp's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace {

namespace ca = cachedarrays;
namespace detail = cachedarrays::detail;
using detail::CopyBand;
using detail::CopyCandidate;
using detail::CopyPath;
using detail::CopyTimings;

// Timings with the same figures in every band: memcpy and nt on one thread,
// and split.
CopyTimings same_in_every_band(double memcpy, double nt, double memcpy_split, double nt_split) {
  CopyTimings t;
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    t.set(band, CopyCandidate::memcpy, memcpy);
    t.set(band, CopyCandidate::nontemporal, nt);
    t.set(band, CopyCandidate::memcpy_split, memcpy_split);
    t.set(band, CopyCandidate::nontemporal_split, nt_split);
  }
  return t;
}

using test::contains;

}  // namespace

TEST_CASE("choose_copy_paths: memcpy where it is clearly faster (a CPU with fast rep movsb)") {
  const detail::CopyChoice c = detail::choose_copy_paths(same_in_every_band(11.2, 6.0, 11.0, 6.1));
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    INFO("band ", std::string(detail::copy_band_name(band)));
    CHECK(c.band(band).path == CopyPath::memcpy);
    CHECK(c.band(band).split_path == CopyPath::memcpy);
    // Split memcpy at 11.0 is within the margin of one thread's 11.2: the split stays.
    CHECK(c.band(band).split);
    CHECK(contains(c.band(band).why, "11.2"));
  }
}

TEST_CASE("choose_copy_paths: non-temporal stores where they are clearly faster") {
  const detail::CopyChoice c = detail::choose_copy_paths(same_in_every_band(6.0, 11.2, 7.0, 14.0));
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    CHECK(c.band(band).path == CopyPath::nontemporal);
    CHECK(c.band(band).split_path == CopyPath::nontemporal);
    CHECK(c.band(band).split);
  }
}

TEST_CASE("choose_copy_paths: each band decides for itself") {
  CopyTimings t = same_in_every_band(6.0, 11.0, 6.0, 11.0);
  t.set(CopyBand::large, CopyCandidate::memcpy, 20.0);
  t.set(CopyBand::large, CopyCandidate::memcpy_split, 20.0);
  const detail::CopyChoice c = detail::choose_copy_paths(t);
  CHECK(c.band(CopyBand::small).path == CopyPath::nontemporal);
  CHECK(c.band(CopyBand::medium).split_path == CopyPath::nontemporal);
  CHECK(c.band(CopyBand::large).path == CopyPath::memcpy);
  CHECK(c.band(CopyBand::large).split_path == CopyPath::memcpy);
}

TEST_CASE("choose_copy_paths: a near tie keeps the incumbent, either way round") {
  // memcpy 5% faster: noise, the non-temporal stores stay.
  const detail::CopyChoice a = detail::choose_copy_paths(same_in_every_band(10.5, 10.0, 10.5, 10.0));
  CHECK(a.band(CopyBand::large).path == CopyPath::nontemporal);
  CHECK(a.band(CopyBand::large).split_path == CopyPath::nontemporal);
  CHECK(contains(a.band(CopyBand::large).why, "not 10% faster"));
  // nt 5% faster: nt as well, of course.
  const detail::CopyChoice b = detail::choose_copy_paths(same_in_every_band(10.0, 10.5, 10.0, 10.5));
  CHECK(b.band(CopyBand::large).path == CopyPath::nontemporal);
  // Just past the margin, memcpy wins.
  const detail::CopyChoice m = detail::choose_copy_paths(same_in_every_band(11.2, 10.0, 11.2, 10.0));
  CHECK(m.band(CopyBand::large).path == CopyPath::memcpy);
  CHECK(m.band(CopyBand::large).split_path == CopyPath::memcpy);
}

TEST_CASE("choose_copy_paths: one thread replaces the split only when clearly faster") {
  // One thread at 12 against a split at 6 (a machine whose second core is busy).
  const detail::CopyChoice one = detail::choose_copy_paths(same_in_every_band(12.0, 5.0, 6.0, 4.0));
  CHECK_FALSE(one.band(CopyBand::large).split);
  CHECK(one.band(CopyBand::large).path == CopyPath::memcpy);
  // One thread 5% faster than the split: the split stays.
  const detail::CopyChoice tie = detail::choose_copy_paths(same_in_every_band(10.5, 5.0, 10.0, 4.0));
  CHECK(tie.band(CopyBand::large).split);
}

TEST_CASE("choose_copy_paths: what was not measured never wins") {
  // Nothing measured (the budget ended first): what the engine did before.
  const detail::CopyChoice none = detail::choose_copy_paths(CopyTimings{});
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    CHECK(none.band(band).path == CopyPath::nontemporal);
    CHECK(none.band(band).split);
    CHECK(none.band(band).split_path == CopyPath::nontemporal);
  }
  // Only memcpy measured: its figure is not evidence against a missing one.
  CopyTimings only_memcpy;
  only_memcpy.set(CopyBand::large, CopyCandidate::memcpy, 50.0);
  const detail::CopyChoice m = detail::choose_copy_paths(only_memcpy);
  CHECK(m.band(CopyBand::large).path == CopyPath::nontemporal);
  CHECK(m.band(CopyBand::large).split);
}

TEST_CASE("calibrate_copy_paths: bounded wall time and bytes, every figure real") {
  const CopyTimings t = detail::calibrate_copy_paths();
  INFO("seconds ", t.seconds, ", bytes ", t.bytes, ", note '", t.note, "'");
  // The bytes are the bound that holds on any machine: the first round's
  // 41 MiB and at most two more rounds while the budget lasts. The time
  // bound is scaled to this process's speed (a sanitizer copies several
  // times slower), yet a calibration that timed gigabyte copies or never
  // stopped breaks it.
  CHECK(t.seconds > 0);
  CHECK(t.seconds <= test::generous_seconds(2.0));
  CHECK(t.bytes <= (std::uint64_t{128} << 20));
  for (std::size_t b = 0; b < detail::copy_band_count; ++b) {
    CHECK(t.sample_bytes[b] <= (std::uint64_t{64} << 20));
    for (const double gbps : t.gbps[b]) CHECK((std::isfinite(gbps) && gbps >= 0));
  }
  // Every candidate it has is measured, however busy the machine: the first
  // round runs whole (the small band is never split).
  CHECK(t.bytes > 0);
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    CHECK(t.get(band, CopyCandidate::memcpy) > 0);
    CHECK(t.get(band, CopyCandidate::nontemporal) > 0);
  }
  CHECK(t.get(CopyBand::large, CopyCandidate::nontemporal_split) > 0);
  CHECK(t.get(CopyBand::medium, CopyCandidate::memcpy_split) > 0);
  CHECK(t.get(CopyBand::small, CopyCandidate::memcpy_split) == 0);
}

TEST_CASE("calibrate_copy_paths: a budget too short for the scratch pages still measures every candidate once") {
  const CopyTimings t = detail::calibrate_copy_paths(1e-9);
  for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
    CHECK(t.get(band, CopyCandidate::memcpy) > 0);
    CHECK(t.get(band, CopyCandidate::nontemporal) > 0);
  }
  CHECK(contains(t.note, "1 of 3 rounds"));
}

TEST_CASE("calibrate_copy_paths: no budget, no copies, and it says so") {
  const CopyTimings t = detail::calibrate_copy_paths(0.0);
  CHECK(t.bytes == 0);
  CHECK(contains(t.note, "budget"));
  const detail::CopyChoice c = detail::choose_copy_paths(t);
  CHECK(c.band(CopyBand::large).path == CopyPath::nontemporal);
}

namespace {

// An environment holding only CACHEDARRAYS_COPY=`value` (unset: nullopt).
ca::EnvironmentLookup copy_variable(std::optional<std::string> value) {
  return [value](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "CACHEDARRAYS_COPY") return value;
    return std::nullopt;
  };
}

}  // namespace

TEST_CASE("CACHEDARRAYS_COPY: auto, nt and memcpy are read; anything else is refused by name") {
  CHECK_FALSE(ca::read_process_environment(copy_variable(std::nullopt)).copy.has_value());
  CHECK(ca::read_process_environment(copy_variable("auto")).copy == ca::CopyMode::automatic);
  CHECK(ca::read_process_environment(copy_variable("nt")).copy == ca::CopyMode::nontemporal);
  CHECK(ca::read_process_environment(copy_variable("memcpy")).copy == ca::CopyMode::memcpy);
  for (const std::string bad : {"NT", "avx2", "fast", "memcpy "}) {
    try {
      static_cast<void>(ca::read_process_environment(copy_variable(bad)));
      FAIL("no exception for '", bad, "'");
    } catch (const ca::invalid_argument& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(contains(what, "CACHEDARRAYS_COPY"));
      CHECK(contains(what, "'" + bad + "'"));
      CHECK(contains(what, "auto, nt, memcpy"));
    }
  }
}

TEST_CASE("CACHEDARRAYS_COPY: a bad value is refused when a Runtime is made") {
  const test::ScopedEnv env("CACHEDARRAYS_COPY", std::string("fastest"));
  CHECK_THROWS_WITH_AS(ca::check_copy_environment(), doctest::Contains("CACHEDARRAYS_COPY='fastest'"),
                       ca::invalid_argument);
  CHECK_THROWS_WITH_AS(ca::Runtime({ca::dram(1 << 20)}), doctest::Contains("allowed: auto, nt, memcpy"),
                       ca::invalid_argument);
  // The manager reads no environment: a bare DataManager takes the process's setting.
  CHECK_NOTHROW(ca::DataManager({ca::dram(1 << 20)}));
}

TEST_CASE("CACHEDARRAYS_COPY=nt or memcpy forces that store in every band, measuring nothing") {
  for (const CopyPath path : {CopyPath::nontemporal, CopyPath::memcpy}) {
    const detail::CopyChoice c = detail::forced_copy_paths(path, "forced");
    for (const CopyBand band : {CopyBand::small, CopyBand::medium, CopyBand::large}) {
      CHECK(c.band(band).path == path);
      CHECK(c.band(band).split_path == path);
      CHECK(c.band(band).why == "forced");
    }
  }
  // The good values pass the check a Runtime makes.
  for (const char* good : {"auto", "nt", "memcpy"}) {
    CHECK_NOTHROW(ca::check_copy_environment(copy_variable(good)));
  }
}

TEST_CASE("copy_band_of: the bands meet without a gap") {
  CHECK(detail::copy_band_of(0) == CopyBand::small);
  CHECK(detail::copy_band_of(detail::copy_small_band_end - 1) == CopyBand::small);
  CHECK(detail::copy_band_of(detail::copy_small_band_end) == CopyBand::medium);
  CHECK(detail::copy_band_of(detail::copy_medium_band_end - 1) == CopyBand::medium);
  CHECK(detail::copy_band_of(detail::copy_medium_band_end) == CopyBand::large);
  CHECK(detail::copy_band_of(~std::uint64_t{0}) == CopyBand::large);
}

TEST_CASE("copy_path_report: the process's choice, the same every time, in words a tool prints") {
  const ca::CopyPathReport& r = ca::copy_path_report();
  CHECK(&r == &ca::copy_path_report());
  CHECK((r.mode == "auto" || r.mode == "nt" || r.mode == "memcpy"));
  REQUIRE(r.bands.size() == 3);
  CHECK(r.bands[0].band == "small");
  CHECK(r.bands[0].min_bytes == r.always_memcpy_below);
  CHECK(r.bands[0].end_bytes == r.bands[1].min_bytes);
  CHECK(r.bands[1].end_bytes == r.bands[2].min_bytes);
  CHECK(r.bands[2].end_bytes == 0);
  CHECK_FALSE(r.bands[0].split);
  for (const ca::CopyBandReport& b : r.bands) {
    CHECK((b.path == "nt" || b.path == "memcpy"));
    CHECK_FALSE(b.why.empty());
  }
  const std::string line = r.summary();
  CHECK(line.rfind(r.mode + ": small ", 0) == 0);
  CHECK(contains(line, "(nt " + r.nontemporal_isa + ")"));
}
