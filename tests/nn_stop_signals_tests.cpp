// nn::StopSignals: a signal is recorded, not acted on; the fit callback
// answers it; the handlers before it come back; one at a time. (That a
// second signal ends the process at once is checked on train_cnn itself:
// tests/stop_cleanly.py.)
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/stop_signals.hpp"
#include "test_support.hpp"

namespace nn = cachedarrays::nn;

namespace {

bool ignored(int signal) {
  struct sigaction now {};
  ::sigaction(signal, nullptr, &now);
  return now.sa_handler == SIG_IGN;
}

}  // namespace

TEST_CASE("nn stop signals: SIGTERM and SIGINT are recorded as a stop request, the first one kept") {
  // Ignored before: the process survives the signals even if no handler
  // were installed, so a failure here is a failed check, not a dead test run.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_term {
  }, old_int{};
  ::sigaction(SIGTERM, &ignore, &old_term);
  ::sigaction(SIGINT, &ignore, &old_int);
  {
    const nn::StopSignals stop("nn_stop_signals_tests");
    CHECK(!ignored(SIGTERM));
    CHECK(!ignored(SIGINT));
    const auto asked = stop.stop_requested();
    CHECK(stop.received() == 0);
    CHECK(asked() == 0);
    CHECK(test::message_of<cachedarrays::error>([] { nn::StopSignals second("again"); }).find("another one is alive") !=
          std::string::npos);
    ::raise(SIGINT);
    CHECK(stop.received() == SIGINT);
    CHECK(asked() == SIGINT);
  }
  CHECK(ignored(SIGTERM));  // restored
  CHECK(ignored(SIGINT));
  {
    const nn::StopSignals stop("nn_stop_signals_tests");  // a new one starts with none received
    CHECK(stop.received() == 0);
    ::raise(SIGTERM);
    CHECK(stop.received() == SIGTERM);
  }
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  CHECK(nn::StopSignals::name(SIGTERM) == "SIGTERM");
  CHECK(nn::StopSignals::name(SIGINT) == "SIGINT");
  CHECK(nn::StopSignals::name(40) == "signal 40");
}
