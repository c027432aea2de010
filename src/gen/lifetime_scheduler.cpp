// The lifetime scheduler: per-flow plans drawn up front, then packets in time
// order from a heap of the active flows.
#include "src/gen/lifetime_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "src/gen/size_mix.hpp"

namespace flowsketch::gen {

LifetimeScheduler::LifetimeScheduler(const GenConfig& config, const std::vector<Flow>& flows)
    : lives_(flows.size()),
      order_(flows.size()),
      mean_arrival_gap_us_(1e6 / resolved_lifetimes(config).flow_rate),
      sizes_(size_weights(config.sizes)),
      size_rng_(stream_rng(config.seed, Stream::sizes)),
      arrival_rng_(stream_rng(config.seed, Stream::flow_arrivals)),
      spacing_rng_(stream_rng(config.seed, Stream::spacing)) {
    const LifetimeConfig life = resolved_lifetimes(config);
    for (const SizeBin& bin : config.sizes) size_values_.push_back(bin.size);
    // Whole microseconds, as timestamps are: a silence is listed iff its
    // microsecond length times 1000 exceeds round(gap_min * 1e9) ns.
    gap_min_us_ = static_cast<std::uint64_t>(std::llround(life.gap_min * 1e9)) / 1000;

    // Budgets: one packet each, the rest multinomial over Zipf ranks, so the
    // totals are exactly --packets and --flows and every flow exists.
    for (Life& l : lives_) l.budget = 1;
    {
        const AliasTable popularity(zipf_weights(config.flows, config.zipf));
        Rng rng = stream_rng(config.seed, Stream::budgets);
        for (std::uint64_t i = config.flows; i < config.packets; ++i) {
            ++lives_[popularity.sample(rng)].budget;
        }
    }
    // Arrival order: a uniform permutation (Fisher-Yates), so popularity rank
    // and arrival time are independent.
    {
        Rng rng = stream_rng(config.seed, Stream::arrival_order);
        for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<std::uint32_t>(i);
        for (std::size_t i = order_.size(); i > 1; --i) {
            std::swap(order_[i - 1], order_[static_cast<std::size_t>(rng.below(i))]);
        }
    }
    // Every flow draws every attribute from its concern's stream, so changing
    // one option does not shift what the others draw.
    Rng durations = stream_rng(config.seed, Stream::durations);
    Rng pauses = stream_rng(config.seed, Stream::pauses);
    Rng endings = stream_rng(config.seed, Stream::endings);
    const double idle_gap_us = life.idle_gap * 1e6;
    for (std::size_t i = 0; i < lives_.size(); ++i) {
        Life& l = lives_[i];
        l.duration_us = exponential(durations, life.duration_mean * 1e6);
        const bool pause = pauses.chance(life.idle_gap_fraction);
        const double length = (0.5 + pauses.uniform()) * idle_gap_us;
        const double where = pauses.uniform();
        if (pause && l.budget >= 2) {
            l.pause_us = length;
            // After packet 1..budget-1, uniformly.
            l.pause_after =
                1 + std::min(l.budget - 2,
                             static_cast<std::uint32_t>(where * static_cast<double>(l.budget - 1)));
        }
        const double e = endings.uniform();
        if (flows[i].key.protocol == proto_tcp) {
            if (e < life.fin_fraction) {
                l.end = FlowEnd::fin;
            } else if (e < life.fin_fraction + life.rst_fraction) {
                l.end = FlowEnd::rst;
            }
        }
    }
    heap_.reserve(1024);
}

double LifetimeScheduler::next_time_us(std::uint32_t flow, std::uint64_t packet_number) noexcept {
    // Time of packet `packet_number` (1-based), given that the previous one was sent.
    Life& l = lives_[flow];
    const double previous = l.position * l.duration_us;  // planned offset of the packet before
    double offset = 0;
    if (packet_number == l.budget && packet_number > 1) {
        offset = l.duration_us;
    } else if (packet_number > 1) {
        // The next of the budget - 2 interior points, uniform order statistics
        // drawn in sequence: with r points left above x, the lowest is
        // 1 - (1 - x) V^(1/r) for V uniform in (0, 1].
        const auto left = static_cast<double>(l.budget - packet_number);
        const double v = 1 - spacing_rng_.uniform();
        l.position = 1 - (1 - l.position) * std::exp(std::log(v) / left);
        offset = l.position * l.duration_us;
    }
    // The pause replaces the planned spacing after packet pause_after, whose
    // planned offset was `previous` (never the last packet, so position held it).
    if (packet_number == l.pause_after + 1) l.shift_us = l.pause_us - (offset - previous);
    if (l.pause_after != 0 && packet_number > l.pause_after) offset += l.shift_us;
    return l.start_us + offset;
}

PacketEvent LifetimeScheduler::next() {
    // Arrivals enter the heap only when due, so it holds the active flows only.
    while (next_arrival_ < order_.size() && (heap_.empty() || arrival_us_ <= heap_.front().time_us)) {
        const std::uint32_t flow = order_[next_arrival_++];
        lives_[flow].start_us = arrival_us_;
        heap_.push_back({arrival_us_, flow});
        std::push_heap(heap_.begin(), heap_.end());
        arrival_us_ += exponential(arrival_rng_, mean_arrival_gap_us_);
    }
    std::pop_heap(heap_.begin(), heap_.end());
    const Event event = heap_.back();
    heap_.pop_back();

    PacketEvent out;
    out.flow = event.flow;
    out.time_us = static_cast<std::uint64_t>(event.time_us);
    out.wire_size = size_values_[sizes_.sample(size_rng_)];
    // The scheduler counts packets itself: the caller's Flow counters are truth.
    Life& l = lives_[event.flow];
    const std::uint32_t sent = ++l.sent;
    if (sent < l.budget) {
        heap_.push_back({next_time_us(event.flow, sent + 1), event.flow});
        std::push_heap(heap_.begin(), heap_.end());
    }
    return out;
}

std::uint8_t LifetimeScheduler::tcp_flags(const PacketEvent& event,
                                          std::uint64_t packet_number) const noexcept {
    const Life& l = lives_[event.flow];
    if (packet_number != l.budget) return tcp_flags_psh_ack;
    switch (l.end) {
        case FlowEnd::fin: return tcp_flags_fin_ack;
        case FlowEnd::rst: return tcp_flags_rst_ack;
        case FlowEnd::none: break;
    }
    return tcp_flags_psh_ack;
}

void LifetimeScheduler::record(const PacketEvent& event, std::uint64_t packet_number) {
    Life& l = lives_[event.flow];
    if (packet_number > 1) {
        const std::uint64_t silence = event.time_us - l.last_us;
        if (silence > gap_min_us_) gaps_.push_back({event.flow, l.last_us, event.time_us});
        // Flooring both ends to microseconds makes it differ from pause_us by < 1 us.
        if (packet_number == l.pause_after + 1) l.pause_silence_us = silence;
    }
    l.last_us = event.time_us;
}

void LifetimeScheduler::finish() {
    // Emitted in time order; (flow, start) is unique, so no stable sort is needed.
    std::sort(gaps_.begin(), gaps_.end(), [](const Gap& a, const Gap& b) {
        return a.flow != b.flow ? a.flow < b.flow : a.start_us < b.start_us;
    });
}

std::span<const LifetimeScheduler::Gap> LifetimeScheduler::gaps_of(
    std::uint32_t flow) const noexcept {
    // A binary search instead of a per-flow index keeps 12 bytes per flow off the record.
    const auto first = std::lower_bound(gaps_.begin(), gaps_.end(), flow,
                                        [](const Gap& g, std::uint32_t f) { return g.flow < f; });
    auto last = first;
    while (last != gaps_.end() && last->flow == flow) ++last;
    return {first, last};
}

}  // namespace flowsketch::gen
