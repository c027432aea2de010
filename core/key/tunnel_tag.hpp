// What a frame's tunnels add to its key, for the `tunnel` key spec and `+vni`:
// the outermost tunnel's endpoints and type, and the innermost tunnel id
// (VXLAN or Geneve VNI, GRE key). Kept beside the packet record, not in the
// 40-byte flow key, and written only when a key spec asks for it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/key/flow_key.hpp"

namespace flowsketch::core {

/// The tunnel types' names, by code - 1 (code 0: not tunnelled). The same
/// order as capture::TunnelType; the names are part of the report formats.
inline constexpr std::array<std::string_view, 6> tunnel_type_names = {
    "gre", "erspan", "vxlan", "geneve", "ip_in_ip", "gtp_u",
};

/// Name of a tunnel type code as TunnelTag::type holds it ("vxlan"); "none" for 0.
constexpr std::string_view tunnel_code_name(std::uint8_t code) noexcept {
    if (code == 0) return "none";
    return code <= tunnel_type_names.size() ? tunnel_type_names[code - 1] : "unknown";
}

struct TunnelTag {
    /// The outermost tunnel's endpoints: the addresses of the IP header that
    /// carries it (IPv4 in the first 4 bytes, as in FlowKey).
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    /// The innermost VXLAN or Geneve VNI (24 bits) or GRE key (32 bits) among
    /// the tunnels the frame was keyed through; 0 when none has one.
    std::uint32_t id = 0;
    AddressFamily family = AddressFamily::none;  // of src and dst
    /// The outermost tunnel's type, 1 + capture::TunnelType; 0: the frame was
    /// not keyed through a tunnel.
    std::uint8_t type = 0;
    bool has_id = false;  // `id` was set (deeper tunnels do not overwrite it)
};

}  // namespace flowsketch::core
