// What a scheduler hands the `flowsketch gen` loop for each packet (flow,
// time, requested size), and the TCP flag bytes a packet can carry.
#pragma once

#include <cstdint>

namespace flowsketch::gen {

/// One scheduled packet.
struct PacketEvent {
    std::uint32_t flow = 0;       // index into the flow vector
    std::uint64_t time_us = 0;    // microseconds since config.start
    std::uint32_t wire_size = 0;  // requested frame size (FrameBuilder may raise it)
};

/// PacketEvent times are microseconds; pcap timestamps split them at this.
inline constexpr std::uint64_t us_per_s = 1'000'000;

/// TCP flag bytes the generator writes.
inline constexpr std::uint8_t tcp_flags_psh_ack = 0x18;
inline constexpr std::uint8_t tcp_flags_fin_ack = 0x11;
inline constexpr std::uint8_t tcp_flags_rst_ack = 0x14;

}  // namespace flowsketch::gen
