// Frame building for `flowsketch gen`: the Ethernet (optionally 802.1Q), IPv4
// or IPv6, and TCP or UDP headers of one flow's packet, checksums included.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "src/gen/flows.hpp"
#include "src/gen/packet_event.hpp"

namespace flowsketch::gen {

// Locally administered unicast MACs: the link layer is not part of any key.
inline constexpr std::array<std::uint8_t, 12> ethernet_macs = {
    0x02, 0x66, 0x73, 0x00, 0x00, 0x02, 0x02, 0x66, 0x73, 0x00, 0x00, 0x01};

/// Writes link, IP and transport headers of one frame and advances the flow's
/// header state (IPv4 ID, TCP sequence). The payload is zeros, which lets the
/// TCP/UDP checksums be computed from the headers alone.
class FrameBuilder {
  public:
    static constexpr std::size_t max_header_size = 14 + 4 + 40 + 20;
    /// Smallest frame that holds this flow's headers (at least min_frame_size).
    static std::uint32_t min_size(const Flow& flow) noexcept;
    /// Fills `out` (max_header_size bytes) with the headers of a frame of
    /// `wire_size` bytes (>= min_size(flow)); returns the header length.
    static std::size_t build(Flow& flow, std::uint32_t wire_size,
                             std::span<std::uint8_t, max_header_size> out,
                             std::uint8_t tcp_flags = tcp_flags_psh_ack) noexcept;
};

}  // namespace flowsketch::gen
