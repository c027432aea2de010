// The stationary scheduler of `flowsketch gen` (the default mode): a fixed
// population of Zipf-popular flows, sizes from the mix, one Poisson arrival
// process.
#pragma once

#include <cstdint>
#include <vector>

#include "src/gen/distributions.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/packet_event.hpp"
#include "src/gen/random_streams.hpp"

namespace flowsketch::gen {

/// Stationary traffic: Zipf-popular flows, sizes from the mix, Poisson arrivals.
/// Each concern has its own random stream, so changing e.g. --sizes leaves the
/// choice of flows for each packet unchanged.
class PacketScheduler {
  public:
    explicit PacketScheduler(const GenConfig& config);
    PacketEvent next() noexcept;

  private:
    AliasTable popularity_;
    AliasTable sizes_;
    std::vector<std::uint32_t> size_values_;
    Rng flow_rng_;
    Rng size_rng_;
    Rng time_rng_;
    double mean_gap_us_;
    double time_us_ = 0;  // exact time; rounded down to microseconds on output
};

/// Timestamp of the last of `config.packets` stationary packets (what the last
/// PacketScheduler::next() returns), from the arrival stream alone.
std::uint64_t stationary_last_time_us(const GenConfig& config) noexcept;

}  // namespace flowsketch::gen
