// The lifetime scheduler of `flowsketch gen` (`--lifetimes`): flows arrive,
// live for a while, may pause once, and end, optionally with FIN or RST; it
// also keeps the per-flow truth that mode adds (first and last packet, pause,
// silences). The mode is opt-in, and the stationary mode reads none of the
// streams only it draws from, so the stationary output does not depend on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/gen/distributions.hpp"
#include "src/gen/flows.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/packet_event.hpp"
#include "src/gen/random_streams.hpp"

namespace flowsketch::gen {

/// How a flow's last packet ends it (lifetime mode; TCP only).
enum class FlowEnd : std::uint8_t { none = 0, fin = 1, rst = 2 };

/// Flows that arrive, live and end (`--lifetimes`). Each flow gets, up front:
/// a packet budget (1 + its share of the rest by Zipf rank, so --packets and
/// --flows are exact), an arrival time (Poisson at flow_rate, in a random order
/// of ranks), a duration (exponential), maybe one pause, and an ending. Its
/// packets are planned over the duration (first at 0, last at the duration,
/// interior ones uniform order statistics); a pause after packet j replaces the
/// planned spacing between packets j and j + 1, so that silence is exactly the
/// drawn pause and the packets after it move by (pause - spacing). A heap of the
/// active flows' next-packet times orders packets by time; arrivals are pushed
/// lazily, so memory is per flow (a fixed-size record) plus per active flow.
class LifetimeScheduler {
  public:
    /// Per-flow lifetime plan, progress and truth.
    struct Life {
        double start_us = 0;     // arrival = first packet (timestamp: this, floored)
        double duration_us = 0;  // first to last packet as planned, before the pause
        double pause_us = 0;     // scheduled pause (0: none)
        double shift_us = 0;     // added to the packets after the pause
        double position = 0;     // latest interior order statistic in [0, 1]
        std::uint64_t last_us = 0;           // truth: latest emitted timestamp
        std::uint64_t pause_silence_us = 0;  // truth: the pause as emitted (whole us)
        std::uint32_t budget = 0;            // packets this flow sends
        std::uint32_t pause_after = 0;  // packet number followed by the pause (0: none)
        std::uint32_t sent = 0;         // packets scheduled so far
        FlowEnd end = FlowEnd::none;

        std::uint64_t first_us() const noexcept { return static_cast<std::uint64_t>(start_us); }
    };
    /// A silence longer than gap_min between two consecutive packets of a flow.
    struct Gap {
        std::uint32_t flow = 0;
        std::uint64_t start_us = 0;  // the packet before (since config.start)
        std::uint64_t end_us = 0;    // the packet after
    };

    /// `flows` is make_flows(config); its protocols decide which flows may end with FIN/RST.
    LifetimeScheduler(const GenConfig& config, const std::vector<Flow>& flows);
    bool done() const noexcept { return heap_.empty() && next_arrival_ == order_.size(); }
    /// The next packet in time order (ties: lower flow index first). Requires !done().
    PacketEvent next();
    /// TCP flags of the packet `event` (FIN/RST on a flow's last packet).
    std::uint8_t tcp_flags(const PacketEvent& event, std::uint64_t packet_number) const noexcept;
    /// Records truth (first/last time, gaps) for a packet as emitted.
    void record(const PacketEvent& event, std::uint64_t packet_number);
    /// Groups the gap records by flow (call once, after the last packet).
    void finish();
    /// One flow's gap records in time order (after finish()).
    std::span<const Gap> gaps_of(std::uint32_t flow) const noexcept;

    const std::vector<Life>& lives() const noexcept { return lives_; }
    const std::vector<Gap>& gaps() const noexcept { return gaps_; }
    std::uint64_t gap_min_us() const noexcept { return gap_min_us_; }

  private:
    struct Event {
        double time_us;
        std::uint32_t flow;
        // std::priority_queue is a max-heap: "less" means later.
        friend bool operator<(const Event& a, const Event& b) noexcept {
            return a.time_us != b.time_us ? a.time_us > b.time_us : a.flow > b.flow;
        }
    };
    double next_time_us(std::uint32_t flow, std::uint64_t packet_number) noexcept;

    std::vector<Life> lives_;
    std::vector<std::uint32_t> order_;  // flows in arrival order
    std::vector<Event> heap_;           // std::push_heap/pop_heap over Event::operator<
    std::vector<Gap> gaps_;
    std::size_t next_arrival_ = 0;
    double arrival_us_ = 0;
    double mean_arrival_gap_us_;
    std::uint64_t gap_min_us_ = 0;  // list silences strictly longer than this
    AliasTable sizes_;
    std::vector<std::uint32_t> size_values_;
    Rng size_rng_;
    Rng arrival_rng_;
    Rng spacing_rng_;
};

}  // namespace flowsketch::gen
