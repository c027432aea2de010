// Frame building: header bytes and checksums of one packet of a flow.
#include "src/gen/frame_builder.hpp"

#include <algorithm>
#include <cstring>

#include "src/gen/size_mix.hpp"
#include "src/gen/wire.hpp"

namespace flowsketch::gen {

std::uint32_t FrameBuilder::min_size(const Flow& flow) noexcept {
    const std::uint32_t link = flow.vlan_id != 0 ? 18 : 14;
    const std::uint32_t ip = flow.key.family == core::AddressFamily::ipv6 ? 40 : 20;
    const std::uint32_t l4 = flow.key.protocol == proto_tcp ? 20 : 8;
    return std::max(min_frame_size, link + ip + l4);
}

std::size_t FrameBuilder::build(Flow& flow, std::uint32_t wire_size,
                                std::span<std::uint8_t, max_header_size> out,
                                std::uint8_t tcp_flags) noexcept {
    std::uint8_t* p = out.data();
    const core::FlowKey& key = flow.key;
    const bool ipv6 = key.family == core::AddressFamily::ipv6;
    const bool tcp = key.protocol == proto_tcp;

    std::memcpy(p, ethernet_macs.data(), ethernet_macs.size());
    std::size_t off = 12;
    if (flow.vlan_id != 0) {
        put16(p + off, 0x8100);
        put16(p + off + 2, flow.vlan_id);  // PCP 0, DEI 0
        off += 4;
    }
    put16(p + off, ipv6 ? 0x86dd : 0x0800);
    off += 2;

    const auto ip_length = static_cast<std::uint32_t>(wire_size - off);
    const std::size_t ip_offset = off;
    std::uint32_t pseudo_sum = 0;
    std::uint32_t l4_length = 0;
    if (ipv6) {
        l4_length = ip_length - 40;
        put32(p + off, 0x60000000U | flow.ipv6_flow_label);
        put16(p + off + 4, l4_length);
        p[off + 6] = key.protocol;
        p[off + 7] = 64;  // hop limit
        std::memcpy(p + off + 8, key.src.data(), 16);
        std::memcpy(p + off + 24, key.dst.data(), 16);
        off += 40;
        // Pseudo-header (RFC 8200 §8.1): addresses, 32-bit length, next header.
        pseudo_sum =
            sum16(p + ip_offset + 8, 32) + (l4_length >> 16) + (l4_length & 0xffff) + key.protocol;
    } else {
        l4_length = ip_length - 20;
        p[off] = 0x45;
        p[off + 1] = 0;
        put16(p + off + 2, ip_length);
        put16(p + off + 4, flow.ipv4_id++);
        put16(p + off + 6, 0x4000);  // DF, offset 0
        p[off + 8] = 64;             // TTL
        p[off + 9] = key.protocol;
        put16(p + off + 10, 0);
        std::memcpy(p + off + 12, key.src.data(), 4);
        std::memcpy(p + off + 16, key.dst.data(), 4);
        put16(p + off + 10, fold_checksum(sum16(p + off, 20)));
        off += 20;
        pseudo_sum = sum16(p + ip_offset + 12, 8) + key.protocol + l4_length;
    }

    const std::size_t l4_offset = off;
    put16(p + off, key.src_port);
    put16(p + off + 2, key.dst_port);
    if (tcp) {
        put32(p + off + 4, flow.tcp_seq);
        put32(p + off + 8, 1);  // ack number: the connection is mid-stream
        p[off + 12] = 0x50;     // data offset 5 words, no options
        p[off + 13] = tcp_flags;  // PSH | ACK unless this packet ends the flow
        put16(p + off + 14, 0xffff);
        put16(p + off + 16, 0);
        put16(p + off + 18, 0);
        off += 20;
        flow.tcp_seq += l4_length - 20;
    } else {
        put16(p + off + 4, l4_length);
        put16(p + off + 6, 0);
        off += 8;
    }
    // The payload is zeros, which add nothing to the ones'-complement sum.
    std::uint16_t checksum = fold_checksum(pseudo_sum + sum16(p + l4_offset, off - l4_offset));
    if (!tcp && checksum == 0) checksum = 0xffff;  // UDP: 0 means "no checksum"
    put16(p + l4_offset + (tcp ? 16 : 6), checksum);
    return off;
}

}  // namespace flowsketch::gen
