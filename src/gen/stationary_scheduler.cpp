// The stationary scheduler: which flow sends the next packet, when, how big.
#include "src/gen/stationary_scheduler.hpp"

#include <cmath>

namespace flowsketch::gen {

PacketScheduler::PacketScheduler(const GenConfig& config)
    : popularity_(zipf_weights(config.flows, config.zipf)),
      sizes_(size_weights(config.sizes)),
      flow_rng_(stream_rng(config.seed, Stream::popularity)),
      size_rng_(stream_rng(config.seed, Stream::sizes)),
      time_rng_(stream_rng(config.seed, Stream::arrivals)),
      mean_gap_us_(1e6 / config.rate) {
    for (const SizeBin& bin : config.sizes) size_values_.push_back(bin.size);
}

PacketEvent PacketScheduler::next() noexcept {
    PacketEvent event;
    event.flow = popularity_.sample(flow_rng_);
    event.wire_size = size_values_[sizes_.sample(size_rng_)];
    event.time_us = static_cast<std::uint64_t>(time_us_);
    // Exponential gap by inversion; 1 - u is in (0, 1], so the log is finite.
    time_us_ -= std::log1p(-time_rng_.uniform()) * mean_gap_us_;
    return event;
}

std::uint64_t stationary_last_time_us(const GenConfig& config) noexcept {
    // The same stream and the same arithmetic as PacketScheduler::next().
    Rng time_rng = stream_rng(config.seed, Stream::arrivals);
    const double mean_gap_us = 1e6 / config.rate;
    double time_us = 0;
    for (std::uint64_t i = 1; i < config.packets; ++i) {
        time_us -= std::log1p(-time_rng.uniform()) * mean_gap_us;
    }
    return static_cast<std::uint64_t>(time_us);
}

}  // namespace flowsketch::gen
