// One keyed packet: what the decoder writes and the measurement reads.
#pragma once

#include <cstdint>

#include "core/key/flow_key.hpp"

namespace flowsketch::core {

/// The decoder fills key, tcp_flags and is_fragment (capture::decode_frame);
/// whoever read the frame fills timestamp_ns and wire_length. The decoder
/// writes into the record the measurement will read, so a key is never
/// copied on the per-packet path.
struct PacketRecord {
    FlowKey key;
    std::int64_t timestamp_ns = 0;
    std::uint32_t wire_length = 0;
    std::uint8_t tcp_flags = 0;  // TCP header flags byte (FIN 0x01, SYN 0x02, RST 0x04, ...); 0 otherwise
    bool is_fragment = false;    // the IP datagram is a fragment (first or later); not measured
};

}  // namespace flowsketch::core
