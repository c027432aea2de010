// Key specs: parsing, canonical names, and the masks they apply to keys.
#include "core/key/key_spec.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace flowsketch::core {
namespace {

FlowKey v4_key() { return FlowKey::ipv4(0xC0A80A21, 0xC6336407, 51000, 443, 6); }

FlowKey v6_key() {
    std::array<std::uint8_t, 16> src{0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::array<std::uint8_t, 16> dst{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xee, 0xdd, 0xcc, 1, 1, 1, 1, 1, 1, 1, 1};
    return FlowKey::ipv6(src, dst, 1234, 53, 17);
}

TEST(KeySpec, FiveTupleIsTheIdentity) {
    const KeySpec spec = KeySpec::parse("5tuple");
    EXPECT_TRUE(spec.is_identity());
    EXPECT_EQ(spec, KeySpec::five_tuple());
    EXPECT_EQ(spec.apply(v4_key()), v4_key());
    EXPECT_EQ(spec.apply(v6_key()), v6_key());
    EXPECT_EQ(spec.name(), "5tuple");
}

TEST(KeySpec, DestinationKeepsOnlyTheDestinationAndFamily) {
    const FlowKey masked = KeySpec::parse("dst").apply(v4_key());
    FlowKey expected;
    expected.dst = v4_key().dst;
    expected.family = AddressFamily::ipv4;
    EXPECT_EQ(masked, expected);
}

TEST(KeySpec, PrefixesCutEachFamilyAtItsOwnLength) {
    const KeySpec spec = KeySpec::parse("dst/24,48");
    const FlowKey v4 = spec.apply(v4_key());
    EXPECT_EQ(v4.dst[0], 0xC6);
    EXPECT_EQ(v4.dst[2], 0x64);
    EXPECT_EQ(v4.dst[3], 0);
    const FlowKey v6 = spec.apply(v6_key());
    EXPECT_EQ(v6.dst[5], 0xee);
    EXPECT_EQ(v6.dst[6], 0);
    EXPECT_EQ(v6.family, AddressFamily::ipv6);
    EXPECT_EQ(v6.dst_port, 0);
    // A prefix not on a byte boundary keeps the high bits of the last byte.
    EXPECT_EQ(KeySpec::parse("src/20").apply(v4_key()).src[2], 0x00);
    EXPECT_EQ(KeySpec::parse("src/21").apply(v4_key()).src[2], 0x08);
}

TEST(KeySpec, KeysWithoutAddressesAreOneKeyAcrossFamilies) {
    const KeySpec spec = KeySpec::parse("proto");
    FlowKey v4 = v4_key();
    FlowKey v6 = v6_key();
    v6.protocol = v4.protocol;
    EXPECT_EQ(spec.apply(v4), spec.apply(v6));
    EXPECT_NE(KeySpec::parse("dport").apply(v4_key()), KeySpec::parse("dport").apply(v6_key()));
}

TEST(KeySpec, NamesRoundTrip) {
    for (const char* text : {"5tuple", "src", "dst", "pair", "sport", "dport", "proto", "src/24,64", "dst/16,48",
                             "dst/0,0"}) {
        EXPECT_EQ(KeySpec::parse(KeySpec::parse(text).name()), KeySpec::parse(text)) << text;
    }
    EXPECT_EQ(KeySpec::parse("dst/24").name(), "dst/24,64");
    EXPECT_EQ(KeySpec::parse("dst/32,128").name(), "dst");
}

TEST(KeySpec, BadSpecsNameThemselves) {
    for (const char* text : {"dst/33", "foo", "src/", "dst/24,129", "dst/x", "", "5tuple+"}) {
        try {
            KeySpec::parse(text);
            ADD_FAILURE() << "accepted " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("'") + text + "'"), std::string::npos) << e.what();
        }
    }
}

TEST(KeySpec, DistinctCountsNameTheirField) {
    const KeySpec victim = KeySpec::parse("dst:distinct=src");
    EXPECT_TRUE(victim.counts_distinct());
    EXPECT_EQ(victim.distinct(), std::uint8_t{key_src});
    EXPECT_EQ(victim.name(), "dst:distinct=src");
    EXPECT_EQ(victim.key_only(), KeySpec::parse("dst"));
    EXPECT_FALSE(victim == KeySpec::parse("dst"));
    // The mask is the key's: the counted field plays no part in the key.
    EXPECT_EQ(victim.apply(v4_key()), KeySpec::parse("dst").apply(v4_key()));
    for (const char* text : {"src:distinct=dport", "src:distinct=dst", "dst/24,64:distinct=src", "pair:distinct=dport",
                             "dport:distinct=src", "dst/24,64:distinct=dst"}) {
        EXPECT_EQ(KeySpec::parse(text).name(), text);
        EXPECT_EQ(KeySpec::parse(KeySpec::parse(text).name()), KeySpec::parse(text)) << text;
    }
}

TEST(KeySpec, ADistinctCountOfAFieldTheKeyKeepsWholeIsRefused) {
    for (const char* text : {"dst:distinct=dst", "5tuple:distinct=src", "pair:distinct=src", "dst:distinct=foo",
                             "dst:distinct=", "dst:count=src", "dst/33:distinct=src"}) {
        try {
            KeySpec::parse(text);
            ADD_FAILURE() << "accepted " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("'") + text + "'"), std::string::npos) << e.what();
        }
    }
}

FlowKey on_vlan(FlowKey key, std::uint16_t vlan) {
    key.vlan = vlan;
    return key;
}

TEST(KeySpec, PlusVlanKeepsTheVlanIdAndTheBaseKeysFields) {
    const FlowKey a = on_vlan(v4_key(), 10);
    const FlowKey b = on_vlan(v4_key(), 20);
    for (const char* base : {"5tuple", "src", "dst", "pair", "dst/24,64", "src/16,48", "sport", "dport", "proto"}) {
        const KeySpec plain = KeySpec::parse(base);
        const KeySpec with_vlan = KeySpec::parse(std::string(base) + "+vlan");
        EXPECT_TRUE(with_vlan.keeps_vlan()) << base;
        EXPECT_FALSE(plain.keeps_vlan()) << base;
        EXPECT_FALSE(with_vlan.is_identity()) << base;
        // Without +vlan two VLANs are one key; with it, two, each the base key plus its id.
        EXPECT_EQ(plain.apply(a), plain.apply(b)) << base;
        EXPECT_EQ(plain.apply(a).vlan, 0) << base;
        EXPECT_NE(with_vlan.apply(a), with_vlan.apply(b)) << base;
        EXPECT_EQ(with_vlan.apply(a), on_vlan(plain.apply(a), 10)) << base;
        EXPECT_EQ(with_vlan.apply(v6_key()), plain.apply(v6_key())) << base;  // untagged: id 0
        EXPECT_EQ(with_vlan.name(), std::string(plain.name()) + "+vlan") << base;
        EXPECT_EQ(KeySpec::parse(with_vlan.name()), with_vlan) << base;
        EXPECT_FALSE(plain == with_vlan) << base;
    }
    // The 5-tuple spec masks the VLAN id out: a key that carries one is not its own 5-tuple key.
    EXPECT_EQ(KeySpec::five_tuple().apply(a), v4_key());
}

TEST(KeySpec, VlanAloneIsOneKeyPerVlanAcrossAddresses) {
    const KeySpec spec = KeySpec::parse("vlan");
    EXPECT_EQ(spec.name(), "vlan");
    EXPECT_TRUE(spec.keeps_vlan());
    EXPECT_EQ(spec.apply(on_vlan(v4_key(), 10)), spec.apply(on_vlan(v6_key(), 10)));
    FlowKey expected;
    expected.vlan = 4094;
    EXPECT_EQ(spec.apply(on_vlan(v6_key(), 4094)), expected);
    EXPECT_EQ(KeySpec::parse("dst+vlan:distinct=src").name(), "dst+vlan:distinct=src");
    EXPECT_EQ(KeySpec::parse("dst+vlan:distinct=src").key_only(), KeySpec::parse("dst+vlan"));
    EXPECT_EQ(KeySpec::parse("vlan:distinct=dst").distinct(), std::uint8_t{key_dst});
}

TEST(KeySpec, BadVlanSpecsNameThemselves) {
    for (const char* text : {"vlan+vlan", "dst+vlan+vlan", "+vlan", "dst/33+vlan", "foo+vlan", "vlan+dst",
                             "dst+vlan:distinct=dst", "dst:distinct=vlan", "dstvlan"}) {
        try {
            KeySpec::parse(text);
            ADD_FAILURE() << "accepted " << text;
        } catch (const std::invalid_argument& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find(std::string("'") + text + "'"), std::string::npos) << message;
            EXPECT_EQ(message.find("key spec", 1), std::string::npos) << "named twice: " << message;
        }
    }
}

TEST(KeySpec, FieldHashesSeeTheWholeField) {
    const FlowKey a = FlowKey::ipv4(0x0A000001, 0x0A000002, 1000, 80, 6);
    const FlowKey b = FlowKey::ipv4(0x0A000001, 0x0A000003, 1001, 80, 6);
    EXPECT_EQ(field_hash(a, key_src, 1), field_hash(b, key_src, 1));
    EXPECT_NE(field_hash(a, key_dst, 1), field_hash(b, key_dst, 1));
    EXPECT_NE(field_hash(a, key_sport, 1), field_hash(b, key_sport, 1));
    EXPECT_EQ(field_hash(a, key_dport, 1), field_hash(b, key_dport, 1));
    EXPECT_NE(field_hash(a, key_src, 1), field_hash(a, key_src, 2));
}

TunnelTag vxlan_tag(std::uint32_t vni) {
    TunnelTag tag;
    tag.src = {192, 0, 2, 1};
    tag.dst = {198, 51, 100, 7};
    tag.family = AddressFamily::ipv4;
    tag.type = 3;  // vxlan
    tag.id = vni;
    tag.has_id = true;
    return tag;
}

TEST(KeySpec, PlusVniKeepsTheIdInBytesTheSpecDoesNotKeep) {
    for (const char* text : {"dst+vni", "pair+vni", "src/24+vni", "sport+vni", "dport+vni", "proto+vni", "vni",
                             "dst+vlan+vni", "tunnel+vni"}) {
        SCOPED_TRACE(text);
        const KeySpec spec = KeySpec::parse(text);
        EXPECT_TRUE(spec.keeps_tunnel());
        EXPECT_FALSE(spec.is_identity());
        EXPECT_EQ(KeySpec::parse(spec.name()), spec);
        for (const FlowKey& key : {v4_key(), v6_key()}) {
            const FlowKey a = spec.key_of(key, vxlan_tag(5001));
            const FlowKey b = spec.key_of(key, vxlan_tag(5002));
            EXPECT_NE(a, b);
            EXPECT_EQ(spec.vni_of(a), 5001u);
            EXPECT_EQ(spec.vni_of(b), 5002u);
            // The id did not overwrite a field the spec keeps.
            KeySpec base = KeySpec::parse(std::string(text) == "vni" ? "proto" : std::string(text).substr(0, std::string(text).size() - 4));
            if (!spec.is_tunnel() && std::string(text) != "vni") {
                FlowKey without = a;
                std::memset(reinterpret_cast<std::uint8_t*>(&without) + spec.vni_offset(), 0, 4);
                EXPECT_EQ(without, base.apply(key));
            }
        }
    }
    EXPECT_EQ(KeySpec::parse("dst+vni+vlan"), KeySpec::parse("dst+vlan+vni"));
}

TEST(KeySpec, TunnelKeysTheOuterEndpointsAndType) {
    const KeySpec spec = KeySpec::parse("tunnel");
    EXPECT_TRUE(spec.is_tunnel());
    EXPECT_FALSE(spec.has(key_src));
    const FlowKey key = spec.key_of(v4_key(), vxlan_tag(5001));
    EXPECT_EQ(format_address(key, true), "192.0.2.1");
    EXPECT_EQ(format_address(key, false), "198.51.100.7");
    EXPECT_EQ(tunnel_code_name(key.protocol), "vxlan");
    EXPECT_EQ(key.src_port, 0);
    EXPECT_EQ(key, spec.key_of(v6_key(), vxlan_tag(5002)));  // the inner flow and the id are not kept
    EXPECT_EQ(KeySpec::parse("tunnel:distinct=src").distinct(), key_src);  // the inner sources per tunnel
}

TEST(KeySpec, BadTunnelSpecsNameThemselves) {
    for (const char* text : {"5tuple+vni", "5tuple+vlan+vni", "vni+vni", "dst+vni+vni", "tunnel+tunnel", "tunnel/24"}) {
        try {
            KeySpec::parse(text);
            ADD_FAILURE() << text << " accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("'") + text + "'"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(KeySpec(key_tunnel | key_dst), std::invalid_argument);
    EXPECT_THROW(KeySpec(key_vni | key_src | key_sport), std::invalid_argument);
}

}  // namespace
}  // namespace flowsketch::core
