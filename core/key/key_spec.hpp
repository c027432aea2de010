// A key spec: which fields of the flow key a measurement aggregates by, and
// how long an address prefix it keeps. It is a mask over FlowKey's fixed
// 40-byte layout (one for IPv4 keys, one for IPv6), so every key spec hashes
// with the same kernel and fills the same cache lines as the 5-tuple.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/key/flow_key.hpp"

namespace flowsketch::core {

/// The fields a key spec can keep (bit flags).
enum KeyField : std::uint8_t {
    key_src = 1,
    key_dst = 2,
    key_sport = 4,
    key_dport = 8,
    key_proto = 16,
};

class KeySpec {
public:
    /// The directional 5-tuple: every field, whole addresses (the identity mask).
    static KeySpec five_tuple() noexcept { return KeySpec(key_src | key_dst | key_sport | key_dport | key_proto); }

    /// `fields` is a combination of KeyField; prefix lengths apply to the
    /// addresses kept (IPv4 0..32, IPv6 0..128). Throws std::invalid_argument
    /// on no fields or a prefix length out of range.
    explicit KeySpec(std::uint8_t fields, std::uint8_t src_prefix_v4 = 32, std::uint8_t src_prefix_v6 = 128,
                     std::uint8_t dst_prefix_v4 = 32, std::uint8_t dst_prefix_v6 = 128);

    /// Parses `5tuple`, `src`, `dst`, `pair`, `src/N[,M]`, `dst/N[,M]` (N for
    /// IPv4, M for IPv6, default 64), `sport`, `dport`, `proto`. Throws
    /// std::invalid_argument with a message naming the spec.
    static KeySpec parse(std::string_view text);

    /// The canonical text of the spec (parse(name()) gives back every spec parse accepts).
    std::string name() const;

    bool has(KeyField field) const noexcept { return (fields_ & field) != 0; }
    std::uint8_t fields() const noexcept { return fields_; }
    /// Prefix length kept of the source (or destination) address of `family`.
    std::uint8_t prefix(bool source, AddressFamily family) const noexcept {
        return family == AddressFamily::ipv6 ? (source ? src_prefix_v6_ : dst_prefix_v6_)
                                             : (source ? src_prefix_v4_ : dst_prefix_v4_);
    }
    /// Whether a field's address is cut to a prefix (for printing "/N").
    bool is_prefix(bool source, AddressFamily family) const noexcept {
        return prefix(source, family) < (family == AddressFamily::ipv6 ? 128 : 32);
    }
    /// The 5-tuple keeps every byte: apply() is the identity and may be skipped.
    bool is_identity() const noexcept { return identity_; }

    /// The key with every byte outside the spec zeroed: the key this spec
    /// aggregates the packet under.
    FlowKey apply(const FlowKey& key) const noexcept {
        const Mask& mask = masks_[key.family == AddressFamily::ipv6 ? 1 : 0];
        auto bytes = std::bit_cast<std::array<std::uint64_t, words>>(key);
        for (std::size_t i = 0; i < words; ++i) bytes[i] &= mask[i];
        return std::bit_cast<FlowKey>(bytes);
    }

    friend bool operator==(const KeySpec& a, const KeySpec& b) noexcept {
        return a.fields_ == b.fields_ && a.src_prefix_v4_ == b.src_prefix_v4_ &&
               a.src_prefix_v6_ == b.src_prefix_v6_ && a.dst_prefix_v4_ == b.dst_prefix_v4_ &&
               a.dst_prefix_v6_ == b.dst_prefix_v6_;
    }

private:
    static constexpr std::size_t words = sizeof(FlowKey) / sizeof(std::uint64_t);
    using Mask = std::array<std::uint64_t, words>;
    Mask mask_for(AddressFamily family) const noexcept;

    std::uint8_t fields_;
    std::uint8_t src_prefix_v4_;
    std::uint8_t src_prefix_v6_;
    std::uint8_t dst_prefix_v4_;
    std::uint8_t dst_prefix_v6_;
    bool identity_ = false;
    std::array<Mask, 2> masks_{};  // [0] IPv4 keys, [1] IPv6 keys
};
static_assert(sizeof(FlowKey) % sizeof(std::uint64_t) == 0, "a key mask is whole 64-bit words");

}  // namespace flowsketch::core
