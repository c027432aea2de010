// A key spec: which fields of the flow key a measurement aggregates by, and
// how long an address prefix it keeps. It is a mask over FlowKey's fixed
// 40-byte layout (one for IPv4 keys, one for IPv6), so every key spec hashes
// with the same kernel and fills the same cache lines as the 5-tuple.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"
#include "core/key/tunnel_tag.hpp"

namespace flowsketch::core {

/// The fields a key spec can keep (bit flags).
enum KeyField : std::uint8_t {
    key_src = 1,
    key_dst = 2,
    key_sport = 4,
    key_dport = 8,
    key_proto = 16,
    key_vlan = 32,  // the outer VLAN id (FlowKey::vlan), by `vlan` or `+vlan`
    key_vni = 64,   // the innermost tunnel id (TunnelTag::id), by `vni` or `+vni`
    key_tunnel = 128,  // the outermost tunnel's endpoints and type (TunnelTag), by `tunnel`
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
    /// IPv4, M for IPv6, default 64), `sport`, `dport`, `proto`, `vlan`, `vni`,
    /// `tunnel`; each optionally followed by `+vlan` (the outer VLAN id kept
    /// too) and `+vni` (the tunnel id kept too; not after `5tuple`, see
    /// vni_offset); each optionally followed by `:distinct=FIELD` (src, dst,
    /// sport, dport or proto). Throws std::invalid_argument with a message
    /// naming the spec.
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
    /// The 5-tuple: apply() is the identity on keys whose VLAN id is 0 (the
    /// decoder's keys unless a spec keeps the VLAN id) and may be skipped.
    bool is_identity() const noexcept { return identity_; }
    /// Whether the key keeps the outer VLAN id: the decoder must write it.
    bool keeps_vlan() const noexcept { return has(key_vlan); }
    /// Whether the key keeps the tunnel id or the tunnel endpoints: the
    /// decoder must write the packet's TunnelTag, and key_of() reads it.
    bool keeps_tunnel() const noexcept { return has(key_vni) || has(key_tunnel); }
    /// The `tunnel` spec keys only frames keyed through a tunnel.
    bool is_tunnel() const noexcept { return has(key_tunnel); }
    /// Where a masked key holds the tunnel id (4 bytes, host order): in the
    /// port bytes when the spec keeps no port, else (`sport`, `dport`) in the
    /// source address bytes, which it does not keep either.
    std::size_t vni_offset() const noexcept {
        return has(key_sport) || has(key_dport) ? offsetof(FlowKey, src) : offsetof(FlowKey, src_port);
    }
    /// The tunnel id a key of this spec holds (0 when it keeps none).
    std::uint32_t vni_of(const FlowKey& key) const noexcept {
        std::uint32_t id = 0;
        if (has(key_vni)) std::memcpy(&id, reinterpret_cast<const std::uint8_t*>(&key) + vni_offset(), 4);
        return id;
    }

    /// The field whose distinct values are counted per key (`dst:distinct=src`),
    /// or 0 when the spec counts none.
    std::uint8_t distinct() const noexcept { return distinct_; }
    bool counts_distinct() const noexcept { return distinct_ != 0; }
    /// This spec counting the distinct values of `field` per key. Throws
    /// std::invalid_argument when the key keeps that field whole (each key
    /// would have one value) or `field` is not one KeyField.
    KeySpec with_distinct(KeyField field) const;
    /// The spec without its distinct count: the key alone.
    KeySpec key_only() const noexcept {
        KeySpec spec = *this;
        spec.distinct_ = 0;
        return spec;
    }

    /// The key with every byte outside the spec zeroed: the key this spec
    /// aggregates the packet under.
    FlowKey apply(const FlowKey& key) const noexcept {
        const Mask& mask = masks_[key.family == AddressFamily::ipv6 ? 1 : 0];
        auto bytes = std::bit_cast<std::array<std::uint64_t, words>>(key);
        for (std::size_t i = 0; i < words; ++i) bytes[i] &= mask[i];
        return std::bit_cast<FlowKey>(bytes);
    }
    /// The key this spec aggregates a packet under, when keeps_tunnel(): for
    /// `tunnel`, the outer endpoints with the tunnel type in the protocol
    /// byte; with `+vni`, the tunnel id at vni_offset(). A `tunnel` spec has
    /// no key for a frame whose `tag.type` is 0.
    FlowKey key_of(const FlowKey& key, const TunnelTag& tag) const noexcept {
        FlowKey masked;
        if (has(key_tunnel)) {
            FlowKey outer;
            outer.src = tag.src;
            outer.dst = tag.dst;
            outer.protocol = tag.type;
            outer.family = tag.family;
            outer.vlan = key.vlan;
            masked = apply(outer);
        } else {
            masked = apply(key);
        }
        if (has(key_vni)) std::memcpy(reinterpret_cast<std::uint8_t*>(&masked) + vni_offset(), &tag.id, 4);
        return masked;
    }

    friend bool operator==(const KeySpec& a, const KeySpec& b) noexcept {
        return a.fields_ == b.fields_ && a.src_prefix_v4_ == b.src_prefix_v4_ &&
               a.src_prefix_v6_ == b.src_prefix_v6_ && a.dst_prefix_v4_ == b.dst_prefix_v4_ &&
               a.dst_prefix_v6_ == b.dst_prefix_v6_ && a.distinct_ == b.distinct_;
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
    std::uint8_t distinct_ = 0;
    std::array<Mask, 2> masks_{};  // [0] IPv4 keys, [1] IPv6 keys
};
static_assert(sizeof(FlowKey) % sizeof(std::uint64_t) == 0, "a key mask is whole 64-bit words");

/// A 64-bit hash of one field of a packet's key (its whole value: the address
/// with its family, or the port or protocol number): the item whose distinct
/// values a spec with distinct() counts. A bijective mix of the field's words
/// (fmix64, in core/key/hash.hpp), seeded so that probes of one deployment agree.
inline std::uint64_t field_hash(const FlowKey& key, std::uint8_t field, std::uint64_t seed) noexcept {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    if (field == key_src || field == key_dst) {
        const auto& address = field == key_src ? key.src : key.dst;
        std::memcpy(&a, address.data(), 8);
        std::memcpy(&b, address.data() + 8, 8);
        b ^= static_cast<std::uint64_t>(key.family) << 56;
    } else {
        a = field == key_sport ? key.src_port : field == key_dport ? key.dst_port : key.protocol;
        b = field;
    }
    return fmix64(fmix64(a ^ seed) ^ (b + 0x9e3779b97f4a7c15ULL));
}

}  // namespace flowsketch::core
