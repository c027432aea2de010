// The directional 5-tuple every packet is keyed by.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <string>

namespace flowsketch::core {

enum class AddressFamily : std::uint8_t { none = 0, ipv4 = 4, ipv6 = 6 };

/// A fixed-size, zero-initialised byte layout: hash and equality read the same
/// 40 bytes, so there is no padding that could differ between equal keys.
/// IPv4 addresses live in the first 4 bytes of the 16-byte fields (rest zero);
/// the family byte keeps 1.2.3.4 distinct from the IPv6 address 0102:0304::.
/// Direction is kept (src is the sender), as operators ask "who sends".
struct FlowKey {
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    std::uint16_t src_port = 0;  // host byte order; 0 when the protocol has no ports
    std::uint16_t dst_port = 0;
    std::uint8_t protocol = 0;  // IP protocol number (IPv6: the upper-layer header)
    AddressFamily family = AddressFamily::none;
    std::array<std::uint8_t, 2> reserved{};  // always zero; makes the size 40

    friend bool operator==(const FlowKey& a, const FlowKey& b) noexcept {
        return std::memcmp(&a, &b, sizeof(FlowKey)) == 0;
    }

    static FlowKey ipv4(std::uint32_t src_host_order, std::uint32_t dst_host_order,
                        std::uint16_t sport, std::uint16_t dport, std::uint8_t proto) noexcept;
    static FlowKey ipv6(const std::array<std::uint8_t, 16>& src,
                        const std::array<std::uint8_t, 16>& dst, std::uint16_t sport,
                        std::uint16_t dport, std::uint8_t proto) noexcept;
};
static_assert(sizeof(FlowKey) == 40, "FlowKey must have no hidden padding");

/// Standard text form of an address (dotted quad; RFC 5952 compressed IPv6).
std::string format_address(const FlowKey& key, bool source);

/// Total order used to make report output deterministic on ties.
std::strong_ordering compare_keys(const FlowKey& a, const FlowKey& b) noexcept;

}  // namespace flowsketch::core
