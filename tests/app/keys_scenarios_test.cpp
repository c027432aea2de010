// Every key spec on generated attack scenarios, checked against the
// generator's truth: each listed estimate is at least its key's true count
// and its lower bound at most; each distinct count's truth lies within its
// bounds; the scanner, the victim and the carpet-bombed /24 come first where
// their distinct counts put them; traffic that starts mid-run is the first
// change of the interval it starts in, and no change before.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/json_reports.hpp"
#include "tests/support/scenario_truth.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

// 100,000 background packets over 5 s (IPv4 and IPv6, a third of the flows
// tagged), plus each scenario; the surge runs from 3.0 to 3.9 s.
const char* const scenario_args =
    "--packets 100000 --flows 5000 --rate 20000 --vlan 0.3 --seed 5 "
    "--scenario syn-flood,packets=30000,sources=5000 "
    "--scenario carpet-bomb,packets=20000,sources=10000 "
    "--scenario horizontal-scan,hosts=2000 "
    "--scenario vertical-scan,ports=1500 "
    "--scenario surge,packets=5000,start=3,duration=0.9";

class KeysOnScenarios : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        path_ = new std::string(tmp_path("scenarios-" + std::to_string(::getpid()) + ".pcap"));
        const RunResult gen = run_flowsketch("gen --out " + *path_ + " " + scenario_args);
        ASSERT_EQ(gen.exit_code, 0) << gen.err;
        truth_ = new ScenarioTruth(read_scenario_truth(*path_ + ".truth.tsv"));
        ASSERT_EQ(truth_->scenarios.size(), 5u);
    }
    static void TearDownTestSuite() {
        std::remove(path_->c_str());
        std::remove((*path_ + ".truth.tsv").c_str());
        delete path_;
        delete truth_;
    }

    static nlohmann::json final_report(const std::string& args) {
        return single_json_report("-r " + *path_ + " " + args);
    }

    static std::string path() { return *path_; }
    static const ScenarioTruth& truth() { return *truth_; }

private:
    static std::string* path_;
    static ScenarioTruth* truth_;
};
std::string* KeysOnScenarios::path_ = nullptr;
ScenarioTruth* KeysOnScenarios::truth_ = nullptr;

// A listed entry's key in key_text's form.
std::string entry_key(const nlohmann::json& entry, const SpecFields& f) {
    std::string key;
    const auto text = [&](const char* name) {
        const nlohmann::json& value = entry.at(name);
        return value.is_string() ? value.get<std::string>() : value.dump();
    };
    if (f.src) key += "src=" + text("src") + ";";
    if (f.dst) key += "dst=" + text("dst") + ";";
    if (f.sport) key += "sport=" + text("sport") + ";";
    if (f.dport) key += "dport=" + text("dport") + ";";
    if (f.proto) key += "proto=" + text("proto") + ";";
    if (f.vlan) key += "vlan=" + text("vlan") + ";";
    return key;
}

// Every listed entry of a key section against the truth of its spec.
void expect_within_truth(const nlohmann::json& section, const std::string& spec, const ScenarioTruth& truth) {
    const std::size_t colon = spec.find(':');
    const SpecFields f = spec_fields(spec.substr(0, colon));
    const std::map<std::string, KeyTruth> keys = key_truth(truth, spec);
    std::size_t checked = 0;
    for (const char* list : {"top_packets", "top_bytes", "top_distinct"}) {
        if (!section.contains(list)) continue;
        const bool bytes = std::string(list) == "top_bytes";
        for (const auto& entry : section.at(list)) {
            const auto found = keys.find(entry_key(entry, f));
            ASSERT_NE(found, keys.end()) << spec << " lists a key with no traffic: " << entry.dump();
            const std::uint64_t count = bytes ? found->second.bytes : found->second.packets;
            EXPECT_GE(entry.at("estimate").get<std::uint64_t>(), count) << spec << " " << list << " " << entry.dump();
            EXPECT_LE(entry.at("lower").get<std::uint64_t>(), count) << spec << " " << list << " " << entry.dump();
            if (colon != std::string::npos) {
                const auto distinct = static_cast<double>(found->second.distinct.size());
                EXPECT_LE(entry.at("distinct_lower").get<double>(), distinct) << spec << " " << entry.dump();
                EXPECT_GE(entry.at("distinct_upper").get<double>(), distinct) << spec << " " << entry.dump();
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 0u) << spec;
}

TEST_F(KeysOnScenarios, EveryKeySpecWithinItsTruth) {
    const std::vector<std::string> specs = {"src", "dst", "pair", "src/24", "dst/24,48", "sport", "dport", "proto",
                                            "vlan", "5tuple+vlan", "dst+vlan", "dst/24+vlan", "src:distinct=dport",
                                            "src:distinct=dst", "dst/24:distinct=src", "dst:distinct=src"};
    std::string args = "--top 20";
    for (const std::string& spec : specs) args += " --key " + spec;
    const nlohmann::json report = final_report(args);
    for (const std::string& spec : specs) {
        // The report names a spec canonically: dst/24 is dst/24,64.
        std::string named = spec;
        if (spec == "src/24") named = "src/24,64";
        if (spec == "dst/24+vlan") named = "dst/24,64+vlan";
        if (spec == "dst/24:distinct=src") named = "dst/24,64:distinct=src";
        expect_within_truth(key_entry(report, named), spec, truth());
    }
    // The 5-tuple's own lists.
    expect_within_truth(report, "5tuple", truth());
}

TEST_F(KeysOnScenarios, AttacksComeFirstByTheirDistinctCounts) {
    const ScenarioTruth& t = truth();
    const nlohmann::json report =
        final_report("--key src:distinct=dport --key src:distinct=dst --key dst/24:distinct=src --key dst:distinct=src");
    // The vertical scanner: most distinct destination ports.
    EXPECT_EQ(key_entry(report, "src:distinct=dport").at("top_distinct").at(0).at("src"),
              t.scenarios[3].options.at("source"));
    // The horizontal scanner: most distinct destinations.
    EXPECT_EQ(key_entry(report, "src:distinct=dst").at("top_distinct").at(0).at("src"),
              t.scenarios[2].options.at("source"));
    // The carpet-bombed /24: most distinct sources per /24 (10,000, twice the flood's).
    EXPECT_EQ(key_entry(report, "dst/24,64:distinct=src").at("top_distinct").at(0).at("dst"),
              t.scenarios[1].options.at("target") + "/24");
    // The flood's victim: most distinct sources per host, its truth within the bounds.
    const nlohmann::json& victim = key_entry(report, "dst:distinct=src").at("top_distinct").at(0);
    EXPECT_EQ(victim.at("dst"), t.scenarios[0].options.at("target"));
    const auto sources = static_cast<double>(std::stoull(t.scenarios[0].options.at("sources")));
    EXPECT_LE(victim.at("distinct_lower").get<double>(), sources) << victim.dump();
    EXPECT_GE(victim.at("distinct_upper").get<double>(), sources) << victim.dump();
}

// The surge starts at 3.0 s: the interval [3, 4) lists it first among the
// changes, by destination and by 5-tuple; no earlier interval lists it.
TEST_F(KeysOnScenarios, TrafficStartingMidRunIsAChangeOfItsIntervalOnly) {
    const ScenarioLine& surge = truth().scenarios[4];
    const std::int64_t start_ns = 1'700'000'000LL * 1'000'000'000LL;
    ASSERT_GE(surge.first_ns, start_ns + 3'000'000'000LL);
    ASSERT_LT(surge.last_ns, start_ns + 4'000'000'000LL);
    const std::string target = surge.options.at("target");
    const RunResult run = run_flowsketch("-r " + path() + " --key dst --interval 1 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<std::string> lines = lines_of(run.out);
    ASSERT_GE(lines.size(), 5u);
    for (std::size_t i = 0; i <= 3; ++i) {
        const nlohmann::json report = nlohmann::json::parse(lines[i]);
        ASSERT_EQ(report.at("kind"), "interval");
        const nlohmann::json& by_dst = report.at("keys").at(0).at("changes");
        if (i < 3) {
            for (const auto& change : by_dst) EXPECT_NE(change.at("dst"), target) << "interval " << i;
            for (const auto& change : report.at("changes")) EXPECT_NE(change.at("dst"), target) << "interval " << i;
            continue;
        }
        ASSERT_FALSE(by_dst.empty());
        EXPECT_EQ(by_dst.at(0).at("dst"), target) << by_dst.dump();
        EXPECT_EQ(by_dst.at(0).at("previous"), 0);
        // The change is the surge's packets, within the change's bound.
        const auto change = by_dst.at(0).at("change").get<double>();
        EXPECT_GE(change + by_dst.at(0).at("bound").get<double>(), static_cast<double>(surge.packets));
        EXPECT_LE(change - by_dst.at(0).at("bound").get<double>(), static_cast<double>(surge.packets));
        EXPECT_EQ(report.at("changes").at(0).at("dst"), target);
    }
}

TEST_F(KeysOnScenarios, BadSpecsEndWithOneLineNamingThem) {
    for (const std::string spec : {"dst/33", "foo", "dst:distinct=dst", "vlan+vlan"}) {
        const RunResult run = run_flowsketch("-r " + path() + " --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("'" + spec + "'"), std::string::npos) << run.err;
        EXPECT_EQ(run.out, "");
    }
}

}  // namespace
}  // namespace flowsketch::testing
