// Bounds-checked decoding of one captured frame into a flow key.
//
// Every byte is hostile: fields are fetched through checked big-endian reads
// against the captured length; a frame that cannot be keyed comes back with a
// named reason (counted by the caller), never an exception or a crash.
// This folder has no libpcap dependency, so it is unit-tested and fuzzed alone.
//
// The layers, each in its own header, are walked in this order:
//   ethernet_ipv4_fast_path.hpp  the common case in one bounds check
//   link_layer.hpp               Ethernet, VLAN/QinQ, MPLS, PPPoE, Linux cooked, raw, null/loop
//   network_layer.hpp            IPv4, IPv6 with extension headers, fragments
//   tunnel.hpp                   what follows IP: GRE, ERSPAN, VXLAN, Geneve, IP in IP, GTP-U,
//                                whose inner packet goes back to the link or network layer
//   transport_layer.hpp          ports and TCP flags
// over a bounded cursor (reader.hpp). docs/decoding.md states the conventions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "capture/decode/link_type.hpp"
#include "capture/decode/skip_reason.hpp"
#include "capture/decode/tunnel_counts.hpp"
#include "core/key/flow_key.hpp"
#include "core/key/tunnel_tag.hpp"
#include "core/measure/packet_record.hpp"

namespace flowsketch::capture {

/// Limits on per-packet work, so a hostile frame costs bounded time, what the
/// decoder writes beyond the 5-tuple, and whether tunnels are looked into.
struct DecodeLimits {
    unsigned max_vlan_tags = 8;
    unsigned max_mpls_labels = 8;
    unsigned max_ipv6_extension_headers = 8;
    /// Write the outer VLAN id into the key (FlowKey::vlan; the first 802.1Q
    /// or 802.1ad tag, inner tags skipped). Off, the key's VLAN id stays 0:
    /// only a `+vlan` key spec asks for it, and the 5-tuple never keeps it.
    bool outer_vlan = false;
    /// false (--tunnels outer): every frame is keyed by its outermost IP header.
    bool decapsulate_tunnels = true;
    /// Nested tunnels looked into (4, as Zeek); a deeper one keys the frame by
    /// the last inner packet reached.
    unsigned max_tunnel_depth = 4;
};

/// What decoding gives: the key, the TCP flags and whether the datagram is a
/// fragment, written straight into the record the measurement reads (its
/// timestamp and length are the reader's, and decode_frame leaves them alone).
using DecodedPacket = core::PacketRecord;

/// Decodes one frame. On success returns SkipReason::none and fills `out`'s
/// key, tcp_flags and is_fragment; otherwise returns the reason and leaves
/// them unspecified.
/// Reads at most `captured_length` bytes from `data`; never more.
SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits = {}) noexcept;
/// The same, adding what the tunnel layer met to `tunnels`.
SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits,
                        TunnelCounts& tunnels) noexcept;

/// The same, also writing `tag` (reset first): the outermost tunnel's
/// endpoints and type and the innermost tunnel id among the tunnels the frame
/// was keyed through; for the `tunnel` key spec and `+vni`. Left as reset
/// when the frame is not keyed through a tunnel or is skipped.
SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits, TunnelCounts& tunnels,
                        core::TunnelTag& tag) noexcept;

/// True if decode_frame understands this link type.
bool is_supported_link_type(int link_type) noexcept;

}  // namespace flowsketch::capture
