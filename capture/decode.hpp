// Bounds-checked decoding of one captured frame into a flow key.
//
// Every byte is hostile: fields are fetched through checked big-endian reads
// against the captured length; a frame that cannot be keyed comes back with a
// named reason (counted by the caller), never an exception or a crash.
// This file has no libpcap dependency, so it is unit-tested and fuzzed alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/key/flow_key.hpp"
#include "core/measure/packet_record.hpp"

namespace flowsketch::capture {

/// Link-layer types, numbered as libpcap's pcap_datalink() returns them (DLT_*)
/// plus the LINKTYPE_* file values where they differ.
namespace link_type {
inline constexpr int null = 0;         // DLT_NULL: 4-byte address family, host byte order
inline constexpr int ethernet = 1;     // DLT_EN10MB
inline constexpr int raw = 12;         // DLT_RAW on Linux
inline constexpr int raw_openbsd = 14; // DLT_RAW on OpenBSD
inline constexpr int raw_linktype = 101;  // LINKTYPE_RAW as stored in files
inline constexpr int loop = 108;       // DLT_LOOP: address family in network byte order
inline constexpr int linux_sll = 113;  // Linux cooked v1
inline constexpr int ipv4 = 228;       // LINKTYPE_IPV4
inline constexpr int ipv6 = 229;       // LINKTYPE_IPV6
inline constexpr int linux_sll2 = 276; // Linux cooked v2
}  // namespace link_type

/// Why a frame was not keyed. The names (skip_reason_name) are part of the
/// report formats: add reasons at the end, never rename one.
enum class SkipReason : std::uint8_t {
    none = 0,               // decoded: not a skip
    unsupported_link_type,  // the capture's link type is not one we decode
    non_ip,                 // ARP, LLC, LLDP, MPLS carrying non-IP, ...
    truncated_link,         // cut inside the link header, a VLAN tag, MPLS label or PPPoE header
    link_limit,             // more VLAN tags or MPLS labels than DecodeLimits allows
    truncated_ip,           // cut inside the IPv4/IPv6 header or an IPv6 extension header
    invalid_ip,             // bad version, IHL < 5, total length < header length, ...
    ipv6_extension_limit,   // longer IPv6 extension-header chain than DecodeLimits allows
    truncated_transport,    // cut before the TCP/UDP/SCTP ports (or the TCP flags)
    invalid_transport,      // TCP data offset < 5, UDP length < 8, ...
};
inline constexpr std::size_t skip_reason_count = 10;

/// Stable snake_case name of a reason, e.g. "truncated_ip".
std::string_view skip_reason_name(SkipReason reason) noexcept;

/// Limits on per-packet work, so a hostile frame costs bounded time.
struct DecodeLimits {
    unsigned max_vlan_tags = 8;
    unsigned max_mpls_labels = 8;
    unsigned max_ipv6_extension_headers = 8;
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

/// True if decode_frame understands this link type.
bool is_supported_link_type(int link_type) noexcept;

}  // namespace flowsketch::capture
