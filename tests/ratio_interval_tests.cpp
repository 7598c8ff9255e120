// The ratio of two timings with its interval over interleaved rounds
// (tools/support/ratio_interval.hpp), which the benchmarks' goals are
// judged by: Student's t quantiles against published values, an interval
// that covers the true ratio as often as its confidence says on log-normal
// rounds drawn here, and bad input refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "support/ratio_interval.hpp"
#include "test_support.hpp"

using cachedarrays::tools::paired_ratio_interval;
using cachedarrays::tools::RatioInterval;
using cachedarrays::tools::student_t_quantile;

TEST_CASE("ratio interval: Student's t quantiles are the published ones") {
  // Two-sided 90% (the 0.95 quantile) and 95% (0.975) values of the tables.
  CHECK(student_t_quantile(0.95, 1) == doctest::Approx(6.3138).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 2) == doctest::Approx(2.9200).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 4) == doctest::Approx(2.1318).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 9) == doctest::Approx(1.8331).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 30) == doctest::Approx(1.6973).epsilon(1e-4));
  CHECK(student_t_quantile(0.975, 5) == doctest::Approx(2.5706).epsilon(1e-4));
  CHECK(student_t_quantile(0.05, 4) == doctest::Approx(-2.1318).epsilon(1e-4));
  CHECK(student_t_quantile(0.5, 3) == doctest::Approx(0.0));
}

TEST_CASE("ratio interval: the geometric mean of the rounds' ratios, inside an interval that narrows with rounds") {
  const std::vector<double> same{1.2, 1.2, 1.2};
  const RatioInterval flat = paired_ratio_interval(same);
  CHECK(flat.ratio == doctest::Approx(1.2));
  CHECK(flat.low == doctest::Approx(1.2));
  CHECK(flat.high == doctest::Approx(1.2));
  CHECK(flat.rounds == 3);

  const std::vector<double> three{1.0, 1.1, 1.21};
  const RatioInterval r = paired_ratio_interval(three);
  CHECK(r.ratio == doctest::Approx(1.1));  // the geometric mean, not the arithmetic 1.103
  CHECK(r.low < r.ratio);
  CHECK(r.high > r.ratio);
  // By hand: logs 0, ln 1.1, 2 ln 1.1; their sd is ln 1.1; t(0.95, 2) = 2.92.
  const double half = 2.9200 * std::log(1.1) / std::sqrt(3.0);
  CHECK(r.high == doctest::Approx(1.1 * std::exp(half)).epsilon(1e-4));
  CHECK(r.low == doctest::Approx(1.1 / std::exp(half)).epsilon(1e-4));
  CHECK(r.relative_half_width() == doctest::Approx(std::exp(half) - 1).epsilon(1e-4));

  // The inverse ratio gets the mirrored interval.
  const std::vector<double> inverse{1 / 1.0, 1 / 1.1, 1 / 1.21};
  const RatioInterval i = paired_ratio_interval(inverse);
  CHECK(i.low == doctest::Approx(1 / r.high));
  CHECK(i.high == doctest::Approx(1 / r.low));

  // The same spread over twice the rounds: a narrower interval.
  const std::vector<double> six{1.0, 1.1, 1.21, 1.0, 1.1, 1.21};
  CHECK(paired_ratio_interval(six).relative_half_width() < r.relative_half_width());

  // One round: a ratio, no interval.
  const std::vector<double> one{1.3};
  const RatioInterval single = paired_ratio_interval(one);
  CHECK_FALSE(single.has_interval());
  CHECK(single.low == single.high);
  CHECK_FALSE(single.rounds_for(0.03).has_value());
}

TEST_CASE("ratio interval: the rounds it names for a width are the fewest that reach it") {
  const std::vector<double> three{1.0, 1.1, 1.21};
  const RatioInterval r = paired_ratio_interval(three);
  const auto n = r.rounds_for(0.03);
  REQUIRE(n.has_value());
  const auto half_at = [&](std::size_t rounds) {
    return student_t_quantile(0.95, static_cast<double>(rounds - 1)) * r.log_spread /
           std::sqrt(static_cast<double>(rounds));
  };
  CHECK(half_at(*n) < std::log(1.03));
  CHECK(half_at(*n - 1) >= std::log(1.03));
  CHECK_FALSE(r.rounds_for(0.03, *n - 1).has_value());
}

TEST_CASE("ratio interval: on log-normal rounds the 90% interval covers the true ratio about 90% of the time") {
  std::mt19937_64 rng(65);
  std::normal_distribution<double> noise(0.0, 0.05);
  const double truth = 1.08;
  for (std::size_t rounds : {2U, 3U, 5U, 10U}) {
    CAPTURE(rounds);
    int covered = 0;
    constexpr int trials = 4000;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> ratios;
      for (std::size_t k = 0; k < rounds; ++k) {
        const double drawn = noise(rng);
        ratios.push_back(truth * std::exp(drawn));
      }
      const RatioInterval r = paired_ratio_interval(ratios);
      covered += r.low <= truth && truth <= r.high ? 1 : 0;
    }
    // 4000 trials: the share's standard error is 0.5%.
    CHECK(static_cast<double>(covered) / trials == doctest::Approx(0.9).epsilon(0.025));
  }
}

TEST_CASE("ratio interval: bad input is refused, saying what is allowed") {
  const std::vector<double> none;
  test::check_contains(test::message_of<std::invalid_argument>([&] { (void)paired_ratio_interval(none); }),
                       "no ratio; give one per round");
  const std::vector<double> zero{1.0, 0.0};
  test::check_contains(test::message_of<std::invalid_argument>([&] { (void)paired_ratio_interval(zero); }),
                       "ratio 0 of round 1; each must be finite and > 0");
  const std::vector<double> fine{1.0, 1.1};
  test::check_contains(test::message_of<std::invalid_argument>([&] { (void)paired_ratio_interval(fine, 1.0); }),
                       "confidence 1; it must be in (0, 1)");
  test::check_contains(test::message_of<std::invalid_argument>([&] { (void)student_t_quantile(0.95, 0); }),
                       "0 degrees of freedom; they must be finite and > 0");
  test::check_contains(test::message_of<std::invalid_argument>([&] { (void)student_t_quantile(1.5, 3); }),
                       "p = 1.5; it must be in (0, 1)");
}
