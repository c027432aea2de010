// The packets of a run's `--scenario`s: each scenario's flows appended to the
// background's flow vector (so the generator's loop builds, writes and counts
// them as any flow, and the truth lists them), and its packets' times, merged
// into one stream in time order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/gen/flows.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/packet_event.hpp"

namespace flowsketch::gen {

class ScenarioTraffic {
  public:
    /// Where a scenario's flows and packets lie.
    struct Placement {
        std::size_t first_flow = 0;  // index into the flow vector
        std::size_t flows = 0;
        std::uint64_t packets = 0;
        std::uint64_t first_us = 0;  // its first and last packet, microseconds since config.start
        std::uint64_t last_us = 0;
    };

    /// Appends every scenario's flows to `flows` and draws its packets' times:
    /// `packets` at independent uniform times in [start, start + duration],
    /// sorted, the j-th sent by the scenario's flow j mod flows (so every flow
    /// sends, and each flow's packets spread over the span). `span_us` is the
    /// background's last timestamp: the default duration runs to it, and a
    /// surge starts at half of it by default. Throws std::invalid_argument
    /// when two scenarios would share a flow.
    ScenarioTraffic(const GenConfig& config, std::vector<Flow>& flows, std::uint64_t span_us);

    bool done() const noexcept { return next_ == packets_.size(); }
    /// The next packet's time (requires !done()); non-decreasing.
    std::uint64_t next_time_us() const noexcept { return packets_[next_].time_us; }
    /// The next packet (flow index, time, wire size), with its TCP flags.
    PacketEvent next(std::uint8_t& tcp_flags) noexcept;

    const std::vector<Placement>& placements() const noexcept { return placements_; }
    /// The scenario (1, 2, ... in command-line order) a flow belongs to; 0: the background's.
    std::size_t scenario_of(std::size_t flow) const noexcept;

  private:
    struct Packet {
        std::uint64_t time_us;
        std::uint32_t flow;
        std::uint16_t wire;
        std::uint8_t tcp_flags;
    };
    std::vector<Packet> packets_;
    std::size_t next_ = 0;
    std::vector<Placement> placements_;
};

/// Throws std::invalid_argument, naming both, when two of `config`'s
/// scenarios would send the same flow (what the constructor checks, without
/// drawing any packet): for the command line to refuse them up front.
void check_scenario_flows(const GenConfig& config);

}  // namespace flowsketch::gen
