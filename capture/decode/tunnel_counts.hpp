// What the tunnel layer tells the caller besides the key: per tunnel type, the
// frames keyed by an inner flow, and per reason, the frames keyed by an outer
// header because their inner packet could not be keyed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "capture/decode/skip_reason.hpp"

namespace flowsketch::capture {

/// The encapsulations the decoder looks into. The names (tunnel_type_name)
/// are part of the report formats: add types at the end, never rename one.
enum class TunnelType : std::uint8_t {
    gre,       // GRE (RFC 2784/2890) carrying IPv4, IPv6 or Ethernet (transparent bridging)
    erspan,    // ERSPAN type I, II or III (GRE 0x88BE, 0x22EB)
    vxlan,     // VXLAN (UDP port 4789)
    geneve,    // Geneve (UDP port 6081)
    ip_in_ip,  // IPv4 or IPv6 in IPv4 or IPv6 (protocols 4 and 41)
    gtp_u,     // GTPv1-U T-PDU (UDP port 2152)
};
inline constexpr std::size_t tunnel_type_count = 6;

/// Stable snake_case name of a tunnel type, e.g. "vxlan".
std::string_view tunnel_type_name(TunnelType type) noexcept;

/// Counts added to by decode_frame; the caller sums and resets them.
struct TunnelCounts {
    /// Frames keyed by an inner flow, per tunnel type crossed (a frame inside
    /// VXLAN inside GRE counts once for each).
    std::array<std::uint64_t, tunnel_type_count> inner{};
    /// Frames keyed by an outer header because the packet a tunnel carried
    /// could not be keyed, by reason (SkipReason values, tunnel reasons included).
    std::array<std::uint64_t, inner_reason_count> outer_keyed{};

    void add(const TunnelCounts& other) noexcept {
        for (std::size_t i = 0; i < inner.size(); ++i) inner[i] += other.inner[i];
        for (std::size_t i = 0; i < outer_keyed.size(); ++i) outer_keyed[i] += other.outer_keyed[i];
    }
    [[nodiscard]] bool empty() const noexcept {
        for (const std::uint64_t n : inner) if (n != 0) return false;
        for (const std::uint64_t n : outer_keyed) if (n != 0) return false;
        return true;
    }
};

}  // namespace flowsketch::capture
