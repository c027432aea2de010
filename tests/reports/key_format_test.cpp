// Keys are written in one place: the fields a spec keeps, prefixes with their
// length, and the JSON lists of extra key specs built from them.
#include "reports/key_format.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/formats/json.hpp"

namespace flowsketch::reports {
namespace {

const core::FlowKey sample_key = core::FlowKey::ipv4(0xC0000201, 0xC6336407, 51000, 443, 6);

TEST(KeyFormat, FiveTupleFieldsInContractOrder) {
    const auto fields = key_fields(sample_key, core::KeySpec::five_tuple());
    ASSERT_EQ(fields.size(), 5u);
    EXPECT_EQ(fields[0].name, "src");
    EXPECT_EQ(fields[0].text, "192.0.2.1");
    EXPECT_EQ(fields[1].text, "198.51.100.7");
    EXPECT_EQ(fields[2].name, "sport");
    EXPECT_TRUE(fields[2].numeric);
    EXPECT_EQ(fields[4].name, "proto");
    EXPECT_EQ(fields[4].text, "6");
}

TEST(KeyFormat, PrefixSpecsPrintTheNetwork) {
    const core::KeySpec spec = core::KeySpec::parse("dst/24");
    const auto fields = key_fields(spec.apply(sample_key), spec);
    ASSERT_EQ(fields.size(), 1u);
    EXPECT_EQ(fields[0].name, "dst");
    EXPECT_EQ(fields[0].text, "198.51.100.0/24");
    EXPECT_EQ(endpoint(sample_key, true), "192.0.2.1:51000");
    EXPECT_EQ(protocol_name(17), "udp");
    EXPECT_EQ(protocol_name(250), "250");
}

TEST(KeyFormat, JsonListsOfExtraKeysCarryOnlyTheirFields) {
    Report report;
    const core::KeySpec spec = core::KeySpec::parse("dst/24");
    core::KeyTops tops;
    tops.top_packets = core::TopList{spec, core::Weight::packets, 100, {{spec.apply(sample_key), 60, 59, false}}};
    tops.top_bytes = core::TopList{spec, core::Weight::bytes, 9000, {}};
    report.keys.push_back(tops);
    const auto json = nlohmann::json::parse(to_json(report));
    ASSERT_EQ(json["keys"].size(), 1u);
    EXPECT_EQ(json["keys"][0]["spec"], "dst/24,64");
    const auto& row = json["keys"][0]["top_packets"][0];
    EXPECT_EQ(row["dst"], "198.51.100.0/24");
    EXPECT_EQ(row["estimate"], 60);
    EXPECT_EQ(row["lower"], 59);
    EXPECT_FALSE(row.contains("src"));
    EXPECT_TRUE(json["keys"][0]["top_bytes"].empty());
    // Without extra keys the field is absent, as before it existed.
    EXPECT_FALSE(nlohmann::json::parse(to_json(Report{})).contains("keys"));
}

// A +vlan spec's rows add the VLAN id, last and numeric; other specs never show it.
TEST(KeyFormat, VlanIdIsTheLastFieldOfVlanSpecs) {
    core::FlowKey tagged = sample_key;
    tagged.vlan = 4094;
    const core::KeySpec spec = core::KeySpec::parse("dst+vlan");
    const auto fields = key_fields(spec.apply(tagged), spec);
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(fields[0].name, "dst");
    EXPECT_EQ(fields[1].name, "vlan");
    EXPECT_EQ(fields[1].text, "4094");
    EXPECT_TRUE(fields[1].numeric);
    EXPECT_EQ(key_fields(tagged, core::KeySpec::five_tuple()).size(), 5u);
    Report report;
    core::KeyTops tops;
    tops.top_packets = core::TopList{spec, core::Weight::packets, 100, {{spec.apply(tagged), 60, 59, false}}};
    tops.top_bytes = core::TopList{spec, core::Weight::bytes, 9000, {}};
    report.keys.push_back(tops);
    const auto row = nlohmann::json::parse(to_json(report))["keys"][0]["top_packets"][0];
    EXPECT_EQ(row["vlan"], 4094);
    EXPECT_EQ(row["dst"], "198.51.100.7");
}

}  // namespace
}  // namespace flowsketch::reports
