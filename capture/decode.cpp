// Bounds-checked decoding of one frame into a flow key; the contract is in decode.hpp.
//
// Every read goes through Reader, a cursor over (pointer, remaining length). A read
// first compares its byte count with the remaining length (never `ptr + n > end`,
// which can overflow), so nothing past the captured length is touched. Header
// structs are never overlaid on packet bytes. Truncated (bytes missing) and invalid
// (fields contradict each other) are separate reasons, as in tcpdump.
//
// A header is read as far as the last field the decoder uses or checks; bytes after
// that (e.g. the rest of a TCP header) need not be captured.
#include "capture/decode.hpp"

#include <cstring>

namespace flowsketch::capture {
namespace {

class Reader {
  public:
    Reader(const std::uint8_t* data, std::size_t length) noexcept
        : data_(data), remaining_(data == nullptr ? 0 : length) {}

    [[nodiscard]] std::size_t remaining() const noexcept { return remaining_; }

    // Narrows the window to the first `length` bytes (if fewer remain, nothing
    // changes): the IP length bounds everything after the IP header.
    void clamp(std::size_t length) noexcept {
        if (length < remaining_) remaining_ = length;
    }

    [[nodiscard]] bool skip(std::size_t n) noexcept {
        if (remaining_ < n) return false;
        advance(n);
        return true;
    }

    [[nodiscard]] bool peek_u8(std::uint8_t& value) const noexcept {
        if (remaining_ < 1) return false;
        value = data_[0];
        return true;
    }

    [[nodiscard]] bool read_u8(std::uint8_t& value) noexcept {
        if (!peek_u8(value)) return false;
        advance(1);
        return true;
    }

    [[nodiscard]] bool read_be16(std::uint16_t& value) noexcept {
        if (remaining_ < 2) return false;
        value = static_cast<std::uint16_t>((data_[0] << 8) | data_[1]);
        advance(2);
        return true;
    }

    [[nodiscard]] bool read_be32(std::uint32_t& value) noexcept {
        if (remaining_ < 4) return false;
        value = (std::uint32_t{data_[0]} << 24) | (std::uint32_t{data_[1]} << 16) |
                (std::uint32_t{data_[2]} << 8) | std::uint32_t{data_[3]};
        advance(4);
        return true;
    }

    [[nodiscard]] bool read_bytes(std::array<std::uint8_t, 16>& out) noexcept {
        if (remaining_ < out.size()) return false;
        std::memcpy(out.data(), data_, out.size());
        advance(out.size());
        return true;
    }

  private:
    void advance(std::size_t n) noexcept {
        // Callers have checked n <= remaining_; n == 0 never moves a null pointer.
        if (n == 0) return;
        data_ += n;
        remaining_ -= n;
    }

    const std::uint8_t* data_;
    std::size_t remaining_;
};

namespace ethertype {
constexpr std::uint16_t ipv4 = 0x0800;
constexpr std::uint16_t ipv6 = 0x86DD;
constexpr std::uint16_t vlan = 0x8100;      // 802.1Q
constexpr std::uint16_t qinq = 0x88A8;      // 802.1ad service tag
constexpr std::uint16_t qinq_old = 0x9100;  // pre-standard double tagging
constexpr std::uint16_t mpls_unicast = 0x8847;
constexpr std::uint16_t mpls_multicast = 0x8848;
constexpr std::uint16_t pppoe_session = 0x8864;
}  // namespace ethertype

namespace ip_proto {
constexpr std::uint8_t hop_by_hop = 0;
constexpr std::uint8_t tcp = 6;
constexpr std::uint8_t udp = 17;
constexpr std::uint8_t dccp = 33;
constexpr std::uint8_t routing = 43;
constexpr std::uint8_t fragment = 44;
constexpr std::uint8_t auth = 51;  // AH
constexpr std::uint8_t dest_options = 60;
constexpr std::uint8_t sctp = 132;
constexpr std::uint8_t udp_lite = 136;
}  // namespace ip_proto

// Fills the ports (and TCP flags) of the transport header at the reader, or
// leaves them 0 for protocols without ports (ICMP, GRE, ESP, ...). Tunnels are
// keyed by their outer header: nothing here descends into a payload.
SkipReason read_ports(Reader& r, std::uint8_t protocol, std::uint16_t& sport, std::uint16_t& dport,
                      std::uint8_t& tcp_flags) noexcept {
    switch (protocol) {
        case ip_proto::tcp: {
            std::uint8_t offset_byte = 0;
            // Ports, then sequence and acknowledgement numbers, then offset and flags.
            if (!r.read_be16(sport) || !r.read_be16(dport) || !r.skip(8) ||
                !r.read_u8(offset_byte) || !r.read_u8(tcp_flags)) {
                return SkipReason::truncated_transport;
            }
            if ((offset_byte >> 4) < 5) return SkipReason::invalid_transport;
            return SkipReason::none;
        }
        case ip_proto::udp: {
            std::uint16_t udp_length = 0;
            if (!r.read_be16(sport) || !r.read_be16(dport) || !r.read_be16(udp_length)) {
                return SkipReason::truncated_transport;
            }
            // 0 is legal: IPv6 jumbograms (RFC 2675) and offloaded segments carry it.
            if (udp_length != 0 && udp_length < 8) return SkipReason::invalid_transport;
            return SkipReason::none;
        }
        case ip_proto::sctp:
        case ip_proto::udp_lite:
        case ip_proto::dccp:
            if (!r.read_be16(sport) || !r.read_be16(dport)) {
                return SkipReason::truncated_transport;
            }
            return SkipReason::none;
        default:
            return SkipReason::none;
    }
}

SkipReason decode_ipv4(Reader& r, DecodedPacket& out) noexcept {
    std::uint8_t version_ihl = 0;
    if (!r.read_u8(version_ihl)) return SkipReason::truncated_ip;
    if ((version_ihl >> 4) != 4) return SkipReason::invalid_ip;
    const std::size_t header_length = std::size_t{version_ihl & 0x0Fu} * 4;
    if (header_length < 20) return SkipReason::invalid_ip;

    std::uint16_t total_length = 0;
    std::uint16_t fragment_field = 0;
    std::uint8_t protocol = 0;
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    // Type of service, total length, identification, flags and fragment offset, time to
    // live, protocol, checksum, addresses, options.
    if (!r.skip(1) || !r.read_be16(total_length) || !r.skip(2) || !r.read_be16(fragment_field) ||
        !r.skip(1) || !r.read_u8(protocol) || !r.skip(2) || !r.read_be32(src) ||
        !r.read_be32(dst) || !r.skip(header_length - 20)) {
        return SkipReason::truncated_ip;
    }
    // Total length 0 is what TSO/LRO offload leaves in captured packets: keep the
    // captured window. Otherwise the window ends with the datagram, so link-layer
    // padding is never read as transport bytes.
    if (total_length != 0) {
        if (total_length < header_length) return SkipReason::invalid_ip;
        r.clamp(total_length - header_length);
    }

    const std::uint16_t fragment_offset = fragment_field & 0x1FFFu;
    const bool more_fragments = (fragment_field & 0x2000u) != 0;
    out.is_fragment = fragment_offset != 0 || more_fragments;

    std::uint16_t sport = 0;
    std::uint16_t dport = 0;
    // Only the first fragment carries the transport header.
    if (fragment_offset == 0) {
        const SkipReason reason = read_ports(r, protocol, sport, dport, out.tcp_flags);
        if (reason != SkipReason::none) return reason;
    }
    out.key = core::FlowKey::ipv4(src, dst, sport, dport, protocol);
    return SkipReason::none;
}

SkipReason decode_ipv6(Reader& r, DecodedPacket& out, const DecodeLimits& limits) noexcept {
    std::uint8_t version = 0;
    if (!r.peek_u8(version)) return SkipReason::truncated_ip;
    if ((version >> 4) != 6) return SkipReason::invalid_ip;

    std::uint16_t payload_length = 0;
    std::uint8_t next_header = 0;
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    // Version, traffic class and flow label, payload length, next header, hop limit, addresses.
    if (!r.skip(4) || !r.read_be16(payload_length) || !r.read_u8(next_header) || !r.skip(1) ||
        !r.read_bytes(src) || !r.read_bytes(dst)) {
        return SkipReason::truncated_ip;
    }
    // 0 means a jumbogram (length in a hop-by-hop option) or offload: keep the
    // captured window, as for IPv4.
    if (payload_length != 0) r.clamp(payload_length);

    std::uint16_t sport = 0;
    std::uint16_t dport = 0;
    bool later_fragment = false;
    for (unsigned extension_headers = 0;; ++extension_headers) {
        const std::uint8_t header = next_header;
        if (header != ip_proto::hop_by_hop && header != ip_proto::routing &&
            header != ip_proto::dest_options && header != ip_proto::auth &&
            header != ip_proto::fragment) {
            break;  // upper layer, ESP (50), no-next-header (59) or unknown: the walk ends
        }
        if (extension_headers == limits.max_ipv6_extension_headers) {
            return SkipReason::ipv6_extension_limit;
        }
        std::uint8_t length = 0;
        if (!r.read_u8(next_header) || !r.read_u8(length)) return SkipReason::truncated_ip;
        if (header == ip_proto::fragment) {
            // Fixed 8 bytes; `length` was the reserved byte.
            std::uint16_t offset_flags = 0;
            if (!r.read_be16(offset_flags) || !r.skip(4)) return SkipReason::truncated_ip;
            out.is_fragment = true;
            if ((offset_flags >> 3) != 0) {
                later_fragment = true;  // no transport header here: key by protocol only
                break;
            }
            continue;
        }
        // AH counts 4-byte units minus 2 (RFC 4302); the others 8-byte units minus 1.
        const std::size_t header_bytes = header == ip_proto::auth ? (std::size_t{length} + 2) * 4
                                                                  : (std::size_t{length} + 1) * 8;
        if (!r.skip(header_bytes - 2)) return SkipReason::truncated_ip;
    }

    if (!later_fragment) {
        const SkipReason reason = read_ports(r, next_header, sport, dport, out.tcp_flags);
        if (reason != SkipReason::none) return reason;
    }
    out.key = core::FlowKey::ipv6(src, dst, sport, dport, next_header);
    return SkipReason::none;
}

// Raw IP and MPLS payloads say nothing about the version but its first nibble.
SkipReason decode_ip_by_version(Reader& r, DecodedPacket& out, const DecodeLimits& limits,
                                SkipReason otherwise) noexcept {
    std::uint8_t first = 0;
    if (!r.peek_u8(first)) return SkipReason::truncated_ip;
    switch (first >> 4) {
        case 4:
            return decode_ipv4(r, out);
        case 6:
            return decode_ipv6(r, out, limits);
        default:
            return otherwise;
    }
}

// Dispatches on an Ethernet type (also the protocol field of Linux cooked
// captures): VLAN tags and MPLS labels are peeled within the limits.
SkipReason decode_ethertype(Reader& r, std::uint16_t type, DecodedPacket& out,
                            const DecodeLimits& limits) noexcept {
    for (unsigned tags = 0;; ++tags) {
        if (type != ethertype::vlan && type != ethertype::qinq && type != ethertype::qinq_old) {
            break;
        }
        if (tags == limits.max_vlan_tags) return SkipReason::link_limit;
        // Tag control information, then the inner type.
        if (!r.skip(2) || !r.read_be16(type)) return SkipReason::truncated_link;
    }

    switch (type) {
        case ethertype::ipv4:
            return decode_ipv4(r, out);
        case ethertype::ipv6:
            return decode_ipv6(r, out, limits);
        case ethertype::mpls_unicast:
        case ethertype::mpls_multicast:
            for (unsigned labels = 0;; ++labels) {
                if (labels == limits.max_mpls_labels) return SkipReason::link_limit;
                std::uint32_t entry = 0;
                if (!r.read_be32(entry)) return SkipReason::truncated_link;
                if ((entry & 0x100u) != 0) break;  // bottom of stack
            }
            // No payload type in MPLS: guess by the version nibble; a pseudowire
            // (Ethernet, control word) is not keyed.
            return decode_ip_by_version(r, out, limits, SkipReason::non_ip);
        case ethertype::pppoe_session: {
            // Version/type, code, session id, length; then the PPP protocol.
            std::uint16_t ppp_protocol = 0;
            if (!r.skip(6) || !r.read_be16(ppp_protocol)) return SkipReason::truncated_link;
            if (ppp_protocol == 0x0021) return decode_ipv4(r, out);
            if (ppp_protocol == 0x0057) return decode_ipv6(r, out, limits);
            return SkipReason::non_ip;
        }
        default:
            return SkipReason::non_ip;  // ARP, 802.3 length/LLC, LLDP, PPPoE discovery, ...
    }
}

// BSD address families seen in DLT_NULL/DLT_LOOP headers: IPv4 is 2 everywhere,
// IPv6 differs by OS (Linux 10, OpenBSD 24, FreeBSD 28, macOS 30).
SkipReason decode_address_family(Reader& r, std::uint32_t family, DecodedPacket& out,
                                 const DecodeLimits& limits) noexcept {
    switch (family) {
        case 2:
            return decode_ipv4(r, out);
        case 10:
        case 24:
        case 28:
        case 30:
            return decode_ipv6(r, out, limits);
        default:
            return SkipReason::non_ip;
    }
}

constexpr std::array<std::string_view, skip_reason_count> skip_reason_names = {
    "none",
    "unsupported_link_type",
    "non_ip",
    "truncated_link",
    "link_limit",
    "truncated_ip",
    "invalid_ip",
    "ipv6_extension_limit",
    "truncated_transport",
    "invalid_transport",
};

}  // namespace

std::string_view skip_reason_name(SkipReason reason) noexcept {
    const auto index = static_cast<std::size_t>(reason);
    return index < skip_reason_names.size() ? skip_reason_names[index] : "unknown";
}

bool is_supported_link_type(int link_type) noexcept {
    switch (link_type) {
        case link_type::null:
        case link_type::ethernet:
        case link_type::raw:
        case link_type::raw_openbsd:
        case link_type::raw_linktype:
        case link_type::loop:
        case link_type::linux_sll:
        case link_type::ipv4:
        case link_type::ipv6:
        case link_type::linux_sll2:
            return true;
        default:
            return false;
    }
}

SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits) noexcept {
    out.tcp_flags = 0;
    out.is_fragment = false;
    Reader r(data, captured_length);
    std::uint16_t type = 0;
    std::uint32_t family = 0;
    switch (link_type) {
        case link_type::ethernet:
            // Destination and source MAC, then the type.
            if (!r.skip(12) || !r.read_be16(type)) return SkipReason::truncated_link;
            return decode_ethertype(r, type, out, limits);
        case link_type::linux_sll:
            // Packet type, ARPHRD type, address length, 8-byte address, protocol.
            if (!r.skip(14) || !r.read_be16(type)) return SkipReason::truncated_link;
            return decode_ethertype(r, type, out, limits);
        case link_type::linux_sll2:
            // Protocol, reserved, interface index, ARPHRD type, packet type,
            // address length, 8-byte address.
            if (!r.read_be16(type) || !r.skip(18)) return SkipReason::truncated_link;
            return decode_ethertype(r, type, out, limits);
        case link_type::raw:
        case link_type::raw_openbsd:
        case link_type::raw_linktype:
        case link_type::ipv4:
        case link_type::ipv6:
            return decode_ip_by_version(r, out, limits, SkipReason::invalid_ip);
        case link_type::null:
            if (!r.read_be32(family)) return SkipReason::truncated_link;
            // Host byte order of the capturing machine, unknown here: every valid
            // family is < 256, so whichever order gives a small value is the one.
            if (family > 0xFFu) family = __builtin_bswap32(family);
            return decode_address_family(r, family, out, limits);
        case link_type::loop:
            if (!r.read_be32(family)) return SkipReason::truncated_link;
            return decode_address_family(r, family, out, limits);
        default:
            return SkipReason::unsupported_link_type;
    }
}

}  // namespace flowsketch::capture
