// Implementation of copy_channels.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"

#include <algorithm>
#include <utility>

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE CopyChannels::CopyChannels(std::size_t devices, std::vector<double> gbps, unsigned lanes)
    : devices_(devices), gbps_(std::move(gbps)), channel_free_(devices * devices, 0.0), lane_free_(lanes, 0.0) {}

CACHEDARRAYS_INLINE CopyChannels::CopyChannels(const std::vector<DeviceModel>& devices, unsigned lanes)
    : CopyChannels(devices.size(), std::vector<double>(devices.size() * devices.size(), 0.0), lanes) {
  for (std::size_t s = 0; s < devices.size(); ++s) {
    for (std::size_t d = 0; d < devices.size(); ++d) {
      gbps_[s * devices.size() + d] = std::min(devices[s].read_gbps, devices[d].write_gbps);
    }
  }
}

CACHEDARRAYS_INLINE CopyChannels CopyChannels::two_tiers(double to_slow_gbps, double to_fast_gbps, unsigned lanes) {
  // Copies within a tier are not modeled by the planners; give them the
  // slower of the two rates rather than leave a zero to divide by.
  const double within = std::min(to_slow_gbps, to_fast_gbps);
  return CopyChannels(2, {within, to_slow_gbps, to_fast_gbps, within}, lanes);
}

CACHEDARRAYS_INLINE std::size_t CopyChannels::index(DeviceId src, DeviceId dst) const {
  return std::size_t{src} * devices_ + dst;
}

CACHEDARRAYS_INLINE double CopyChannels::gbps(DeviceId src, DeviceId dst) const { return gbps_.at(index(src, dst)); }

CACHEDARRAYS_INLINE double CopyChannels::seconds(DeviceId src, DeviceId dst, std::uint64_t bytes) const {
  return static_cast<double>(bytes) / gbps(src, dst) * 1e-9;
}

CACHEDARRAYS_INLINE double CopyChannels::mover_start(DeviceId src, DeviceId dst, double earliest) const {
  double start = std::max(earliest, channel_free_.at(index(src, dst)));
  if (!lane_free_.empty()) start = std::max(start, *std::min_element(lane_free_.begin(), lane_free_.end()));
  return start;
}

CACHEDARRAYS_INLINE CopySpan CopyChannels::run_on_mover(DeviceId src, DeviceId dst, double seconds, double earliest) {
  const double start = mover_start(src, dst, earliest);
  const double end = start + seconds;
  channel_free_[index(src, dst)] = end;
  if (!lane_free_.empty()) *std::min_element(lane_free_.begin(), lane_free_.end()) = end;
  return {start, end};
}

CACHEDARRAYS_INLINE CopySpan CopyChannels::run_on_caller(DeviceId src, DeviceId dst, double seconds, double earliest) {
  double& free_at = channel_free_.at(index(src, dst));
  const double start = std::max(earliest, free_at);
  free_at = start + seconds;
  return {start, free_at};
}

CACHEDARRAYS_INLINE double CopyChannels::channel_free(DeviceId src, DeviceId dst) const {
  return channel_free_.at(index(src, dst));
}

CACHEDARRAYS_INLINE double CopyChannels::idle_at() const {
  double end = 0;
  for (const double f : channel_free_) end = std::max(end, f);
  return end;
}

CACHEDARRAYS_INLINE void CopyChannels::carry_over(double by) {
  for (double& f : channel_free_) f = std::max(0.0, f - by);
  for (double& f : lane_free_) f = std::max(0.0, f - by);
}

}  // namespace cachedarrays::plan
