// A program that links only the installed cachedarrays::nn and calls only
// its API (see CMakeLists.txt): it starts only if libcachedarrays_nn finds
// libcachedarrays by itself. Building a model records shapes only.
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/version.hpp>

#include <cstdint>
#include <cstdio>

namespace ca = cachedarrays;

int main() {
  const ca::nn::Graph resnet50 = ca::nn::build_model({.family = "resnet", .depth = 50});
  const std::int64_t parameters = resnet50.parameter_count();
  const bool ok = parameters == 25'557'032;  // torchvision's ResNet-50
  std::printf("nn_consumer: cachedarrays %s, ResNet-50 has %lld parameters, %s\n", ca::version_string,
              static_cast<long long>(parameters), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
