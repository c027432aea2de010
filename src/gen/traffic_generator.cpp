// The generator: the per-packet loop of either mode, the flood merged into
// it, and the files it writes.
#include "src/gen/traffic_generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "src/gen/flows.hpp"
#include "src/gen/frame_builder.hpp"
#include "src/gen/lifetime_scheduler.hpp"
#include "src/gen/packet_event.hpp"
#include "src/gen/pcap_writer.hpp"
#include "src/gen/scenario_traffic.hpp"
#include "src/gen/stationary_scheduler.hpp"
#include "src/gen/syn_flood.hpp"
#include "src/gen/truth_file.hpp"

namespace flowsketch::gen {

namespace {

/// Seconds field of a packet's pcap timestamp; throws past what classic pcap
/// holds (gen writes pcapng within the same range: flowsketch clamps at 2116).
std::uint32_t pcap_seconds(const GenConfig& config, std::uint64_t time_us, std::uint64_t index) {
    const std::uint64_t seconds = config.start + time_us / us_per_s;
    if (seconds > std::numeric_limits<std::uint32_t>::max()) {
        throw std::runtime_error(
            fmt::format("packet {} falls after 2106-02-07, past the 32-bit seconds of classic pcap "
                        "timestamps (gen keeps pcapng within them too); "
                        "lower --start or --packets, or raise --rate",
                        index + 1));
    }
    return static_cast<std::uint32_t>(seconds);
}

/// Builds one frame of `flow` and appends it to the pcap; returns its wire length.
std::uint32_t emit_packet(PcapWriter& pcap, const GenConfig& config, Flow& flow,
                          const PacketEvent& event, std::uint64_t index, std::uint8_t tcp_flags) {
    std::array<std::uint8_t, FrameBuilder::max_header_size> headers{};
    const std::uint32_t wire = std::max(event.wire_size, FrameBuilder::min_size(flow));
    const std::size_t header_length = FrameBuilder::build(flow, wire, headers, tcp_flags);

    const std::uint32_t seconds = pcap_seconds(config, event.time_us, index);
    const std::uint32_t captured = std::min(wire, config.snaplen);
    std::uint8_t* data = pcap.begin_record(
        seconds, static_cast<std::uint32_t>(event.time_us % us_per_s), captured, wire);
    const std::size_t copied = std::min<std::size_t>(captured, header_length);
    std::memcpy(data, headers.data(), copied);
    std::memset(data + copied, 0, captured - copied);
    return wire;
}

void count_packet(GenSummary& summary, Flow& flow, const PacketEvent& event, std::uint32_t wire) {
    if (flow.packets++ == 0) ++summary.active_flows;
    flow.bytes += wire;
    ++summary.packets;
    summary.bytes += wire;
    summary.last_time_us = event.time_us;
}

/// Writes the SynFlood's packets into the pcap between the background's, and
/// keeps each one's source and time for the truth (16 bytes per flood flow).
class FloodEmitter {
  public:
    FloodEmitter(const GenConfig& config, std::uint64_t span_us)
        : config_(config), flood_(config, span_us) {
        log_.reserve(static_cast<std::size_t>(config.syn_flood));
    }
    /// Writes the flood packets timestamped before `time_us`: at equal
    /// timestamps the background packet comes first.
    void emit_before(PcapWriter& pcap, GenSummary& summary, std::uint64_t time_us) {
        while (!flood_.done() && flood_.next_time_us() < time_us) emit(pcap, summary);
    }
    void emit_rest(PcapWriter& pcap, GenSummary& summary) {
        while (!flood_.done()) emit(pcap, summary);
    }
    /// The flood flows sorted by source (their truth order); call once, at the end.
    const FloodLog& sorted_log() {
        std::sort(log_.begin(), log_.end(),
                  [](const SynFlood::Packet& a, const SynFlood::Packet& b) {
                      return a.source < b.source;
                  });
        return log_;
    }

  private:
    void emit(PcapWriter& pcap, GenSummary& summary) {
        std::array<std::uint8_t, SynFlood::frame_size> frame{};
        const SynFlood::Packet packet = flood_.next(frame);
        const std::uint32_t seconds = pcap_seconds(config_, packet.time_us, summary.packets);
        const std::uint32_t captured = std::min(SynFlood::frame_size, config_.snaplen);
        std::uint8_t* data =
            pcap.begin_record(seconds, static_cast<std::uint32_t>(packet.time_us % us_per_s),
                              captured, SynFlood::frame_size);
        std::memcpy(data, frame.data(), captured);
        ++summary.packets;
        ++summary.flood_packets;
        ++summary.active_flows;
        summary.bytes += SynFlood::frame_size;
        summary.last_time_us = packet.time_us;
        log_.push_back(packet);
    }

    const GenConfig& config_;
    SynFlood flood_;
    FloodLog log_;
};

GenSummary generate_lifetimes(const GenConfig& config) {
    if (!config.scenarios.empty()) throw std::runtime_error("--scenario is not available with --lifetimes");
    if (config.packets < config.flows) {
        throw std::runtime_error(fmt::format(
            "--lifetimes needs --packets ({}) >= --flows ({}): every flow sends at least one "
            "packet",
            config.packets, config.flows));
    }
    if (config.packets > max_lifetime_packets) {
        throw std::runtime_error(
            fmt::format("--lifetimes allows at most {} packets", max_lifetime_packets));
    }
    std::vector<Flow> flows = make_flows(config);
    PcapWriter pcap(config.out_path, config.snaplen, PcapWriter::linktype_ethernet, config.pcapng);
    BufferedFile truth(config.truth_path);
    // The flood spans the background, whose end is known only by scheduling it:
    // a dry run of the same scheduler (same seed, same draws) finds it.
    std::uint64_t span_us = 0;
    if (config.syn_flood > 0) {
        LifetimeScheduler dry_run(config, flows);
        while (!dry_run.done()) span_us = dry_run.next().time_us;
    }
    LifetimeScheduler scheduler(config, flows);
    FloodEmitter flood(config, span_us);

    GenSummary summary;
    while (!scheduler.done()) {
        const PacketEvent event = scheduler.next();
        flood.emit_before(pcap, summary, event.time_us);
        Flow& flow = flows[event.flow];
        const std::uint64_t number = flow.packets + 1;
        const std::uint32_t wire = emit_packet(pcap, config, flow, event, summary.packets,
                                               scheduler.tcp_flags(event, number));
        scheduler.record(event, number);
        count_packet(summary, flow, event, wire);
    }
    flood.emit_rest(pcap, summary);
    pcap.close();
    scheduler.finish();
    write_lifetime_truth(truth, config, flows, scheduler, flood.sorted_log(), summary);
    truth.close();
    return summary;
}

}  // namespace

GenSummary generate(const GenConfig& config) {
    if (config.life.enabled) return generate_lifetimes(config);
    std::vector<Flow> flows = make_flows(config);
    PacketScheduler scheduler(config);
    // Both files are created first, so a bad path fails before the long loop.
    PcapWriter pcap(config.out_path, config.snaplen, PcapWriter::linktype_ethernet, config.pcapng);
    BufferedFile truth(config.truth_path);
    const bool extras = config.syn_flood > 0 || !config.scenarios.empty();
    const std::uint64_t span_us = extras ? stationary_last_time_us(config) : 0;
    FloodEmitter flood(config, config.syn_flood > 0 ? span_us : 0);
    ScenarioTraffic scenarios(config, flows, span_us);  // appends the scenarios' flows

    GenSummary summary;
    // The flood's and the scenarios' packets due before `time_us`, in time
    // order (at equal times: the background, the flood, then the scenarios).
    const auto emit_extras_before = [&](std::uint64_t time_us) {
        while (!scenarios.done() && scenarios.next_time_us() < time_us) {
            flood.emit_before(pcap, summary, scenarios.next_time_us() + 1);
            std::uint8_t flags = 0;
            const PacketEvent event = scenarios.next(flags);
            Flow& flow = flows[event.flow];
            const std::uint32_t wire = emit_packet(pcap, config, flow, event, summary.packets, flags);
            count_packet(summary, flow, event, wire);
            ++summary.scenario_packets;
        }
        flood.emit_before(pcap, summary, time_us);
    };
    for (std::uint64_t i = 0; i < config.packets; ++i) {
        const PacketEvent event = scheduler.next();
        emit_extras_before(event.time_us);
        Flow& flow = flows[event.flow];
        const std::uint32_t wire =
            emit_packet(pcap, config, flow, event, summary.packets, tcp_flags_psh_ack);
        count_packet(summary, flow, event, wire);
    }
    emit_extras_before(std::numeric_limits<std::uint64_t>::max());
    flood.emit_rest(pcap, summary);
    for (const ScenarioTraffic::Placement& place : scenarios.placements()) summary.scenario_flows += place.flows;
    pcap.close();
    write_truth(truth, config, flows, flood.sorted_log(), summary, scenarios);
    truth.close();
    return summary;
}

}  // namespace flowsketch::gen

