// Transport layer: the ports (and TCP flags) that complete the flow key.
// Private to decode.cpp (see reader.hpp).
#pragma once

#include <cstdint>

#include "capture/decode/protocol_numbers.hpp"
#include "capture/decode/reader.hpp"
#include "capture/decode/skip_reason.hpp"

namespace flowsketch::capture {
namespace {

// Fills the ports (and TCP flags) of the transport header at the reader, or
// leaves them 0 for protocols without ports (ICMP, GRE, ESP, ...).
// A header is read as far as the last field used or checked: the rest of a
// TCP header need not be captured.
FLOWSKETCH_HOT SkipReason read_ports(Reader& r, std::uint8_t protocol, std::uint16_t& sport,
                                     std::uint16_t& dport, std::uint8_t& tcp_flags) noexcept {
    switch (protocol) {
        case ip_proto::tcp: {
            // Ports, sequence and acknowledgement numbers, data offset, flags.
            Header<14> tcp;
            if (!r.take(tcp)) return SkipReason::truncated_transport;
            if ((tcp.u8<12>() >> 4) < 5) return SkipReason::invalid_transport;
            sport = tcp.be16<0>();
            dport = tcp.be16<2>();
            tcp_flags = tcp.u8<13>();
            return SkipReason::none;
        }
        case ip_proto::udp: {
            // Ports and length (the checksum is not needed).
            Header<6> udp;
            if (!r.take(udp)) return SkipReason::truncated_transport;
            // 0 is legal: IPv6 jumbograms (RFC 2675) and offloaded segments carry it.
            const std::uint16_t udp_length = udp.be16<4>();
            if (udp_length != 0 && udp_length < 8) return SkipReason::invalid_transport;
            sport = udp.be16<0>();
            dport = udp.be16<2>();
            return SkipReason::none;
        }
        case ip_proto::sctp:
        case ip_proto::udp_lite:
        case ip_proto::dccp: {
            Header<4> ports;
            if (!r.take(ports)) return SkipReason::truncated_transport;
            sport = ports.be16<0>();
            dport = ports.be16<2>();
            return SkipReason::none;
        }
        default:
            return SkipReason::none;
    }
}

}  // namespace
}  // namespace flowsketch::capture
