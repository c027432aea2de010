// The directional 5-tuple every packet is keyed by.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace flowsketch::core {

enum class AddressFamily : std::uint8_t { none = 0, ipv4 = 4, ipv6 = 6 };

/// A fixed-size, zero-initialised byte layout: hash and equality read the same
/// 40 bytes, so there is no padding that could differ between equal keys.
/// IPv4 addresses live in the first 4 bytes of the 16-byte fields (rest zero);
/// the family byte keeps 1.2.3.4 distinct from the IPv6 address 0102:0304::.
/// Direction is kept (src is the sender), as operators ask "who sends".
/// The assign functions leave the VLAN id 0; the decoder sets it afterwards.
struct FlowKey {
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    std::uint16_t src_port = 0;  // host byte order; 0 when the protocol has no ports
    std::uint16_t dst_port = 0;
    std::uint8_t protocol = 0;  // IP protocol number (IPv6: the upper-layer header)
    AddressFamily family = AddressFamily::none;
    /// The outer 802.1Q/802.1ad VLAN id (12 bits), written only when a key spec
    /// keeps it (DecodeLimits::outer_vlan); 0 otherwise and for untagged or
    /// priority-tagged frames. Makes the size 40.
    std::uint16_t vlan = 0;

    friend bool operator==(const FlowKey& a, const FlowKey& b) noexcept {
        return std::memcmp(&a, &b, sizeof(FlowKey)) == 0;
    }

    static FlowKey ipv4(std::uint32_t src_host_order, std::uint32_t dst_host_order,
                        std::uint16_t sport, std::uint16_t dport, std::uint8_t proto) noexcept {
        FlowKey key;
        key.assign_ipv4(src_host_order, dst_host_order, sport, dport, proto);
        return key;
    }
    /// Makes this the IPv4 key, written as one 16-byte store per address and
    /// one 8-byte store for the rest: the decoder's caller copies the key with
    /// loads of those widths right away, and a load that spans several smaller
    /// stores cannot be forwarded from them (a stall of ~15 cycles; it was
    /// half the pipeline's per-frame time).
    void assign_ipv4(std::uint32_t src_host_order, std::uint32_t dst_host_order,
                     std::uint16_t sport, std::uint16_t dport, std::uint8_t proto) noexcept {
        store_address(src, src_host_order);
        store_address(dst, dst_host_order);
        store_rest(sport, dport, proto, AddressFamily::ipv4);
    }
    static FlowKey ipv6(const std::array<std::uint8_t, 16>& src,
                        const std::array<std::uint8_t, 16>& dst, std::uint16_t sport,
                        std::uint16_t dport, std::uint8_t proto) noexcept {
        FlowKey key;
        key.assign_ipv6(src.data(), dst.data(), sport, dport, proto);
        return key;
    }
    /// Makes this the IPv6 key of the 16-byte addresses at src and dst, with
    /// the same store widths as assign_ipv4 (and for the same reason).
    void assign_ipv6(const std::uint8_t* src_bytes, const std::uint8_t* dst_bytes,
                     std::uint16_t sport, std::uint16_t dport, std::uint8_t proto) noexcept {
        std::memcpy(src.data(), src_bytes, 16);
        std::memcpy(dst.data(), dst_bytes, 16);
        store_rest(sport, dport, proto, AddressFamily::ipv6);
    }

private:
    // The fields after the addresses, as one 8-byte store.
    void store_rest(std::uint16_t sport, std::uint16_t dport, std::uint8_t proto,
                    AddressFamily af) noexcept {
        std::uint8_t rest[8] = {};
        std::memcpy(rest, &sport, 2);
        std::memcpy(rest + 2, &dport, 2);
        rest[4] = proto;
        rest[5] = static_cast<std::uint8_t>(af);
        std::uint64_t word;
        std::memcpy(&word, rest, 8);
        std::memcpy(&src_port, &word, 8);  // src_port .. vlan: 8 contiguous bytes
    }
    // A 16-byte address field holding an IPv4 address (network order) and zeros.
    static void store_address(std::array<std::uint8_t, 16>& field, std::uint32_t host_order) noexcept {
        // The bytes in memory order. (A byte swap, which cancels the decoder's
        // own: shifting the bytes out one by one was not recognised as one.)
        const std::uint32_t network =
            std::endian::native == std::endian::little ? __builtin_bswap32(host_order) : host_order;
#if defined(__SSE2__)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(field.data()),
                         _mm_cvtsi32_si128(static_cast<int>(network)));
#else
        field = {};
        std::memcpy(field.data(), &network, 4);
#endif
    }
};
static_assert(sizeof(FlowKey) == 40, "FlowKey must have no hidden padding");
static_assert(offsetof(FlowKey, vlan) + 2 - offsetof(FlowKey, src_port) == 8,
              "the fields after the addresses are 8 contiguous bytes");

/// Standard text form of an address (dotted quad; RFC 5952 compressed IPv6).
std::string format_address(const FlowKey& key, bool source);

/// Total order used to make report output deterministic on ties.
std::strong_ordering compare_keys(const FlowKey& a, const FlowKey& b) noexcept;

}  // namespace flowsketch::core
