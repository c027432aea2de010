// `flowsketch gen`: synthetic, seeded traffic with exact per-flow truth.
//
// generate() ties the parts together, each in its own file:
//   gen_config.hpp            GenConfig: what to generate, and its command line;
//   flows.hpp                 make_flows(): the flow population, one Flow per 5-tuple;
//   stationary_scheduler.hpp  PacketScheduler: which flow sends the next packet,
//                             when, and how big (the default mode);
//   lifetime_scheduler.hpp    LifetimeScheduler (`--lifetimes`): flows arrive, live
//                             for a while, may pause once, and end;
//   syn_flood.hpp             SynFlood (`--syn-flood`): single-packet SYN flows on
//                             top of either mode, merged in time order;
//   scenario.hpp              Scenario (`--scenario`): attacks and an onset, as text;
//   scenario_traffic.hpp      ScenarioTraffic: their flows and times, merged in time
//                             order into the stationary mode;
//   frame_builder.hpp         FrameBuilder: (Flow, wire length, TCP flags) to header bytes;
//   pcap_writer.hpp           PcapWriter: the capture, classic pcap or pcapng;
//   truth_file.hpp            the truth TSV;
//   buffered_file.hpp         BufferedFile: the buffered output both files go through;
//   distributions.hpp, size_mix.hpp, random_streams.hpp: what the parts draw from;
//   packet_event.hpp, wire.hpp: what the parts pass and encode.
// generate() runs the per-packet loop over a scheduler and writes the pcap and truth.
#pragma once

#include <cstdint>

#include "src/gen/gen_config.hpp"

namespace flowsketch::gen {

struct GenSummary {
    std::uint64_t packets = 0;        // all packets written, --syn-flood's included
    std::uint64_t bytes = 0;          // sum of wire lengths
    std::uint64_t active_flows = 0;   // flows with at least one packet, flood flows included
    std::uint64_t flood_packets = 0;  // of `packets`, the --syn-flood ones (one per flood flow)
    std::uint64_t scenario_packets = 0;  // of `packets`, the --scenario ones
    std::uint64_t scenario_flows = 0;    // of `active_flows`, the --scenario ones (each sends)
    std::uint64_t last_time_us = 0;   // relative to config.start
};

/// Generates the pcap and the truth file. Throws std::runtime_error on I/O errors.
GenSummary generate(const GenConfig& config);

}  // namespace flowsketch::gen
