// The doctest runner for the whole suite. Randomized tests print their seed
// on failure; set CACHEDARRAYS_TEST_SEED to replay one.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
