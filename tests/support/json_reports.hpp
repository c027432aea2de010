// Reading the program's JSON Lines reports in end-to-end tests.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {

/// The last report a run printed, which must be its final one.
inline nlohmann::json final_json_report(const RunResult& run) {
    const std::vector<std::string> lines = lines_of(run.out);
    EXPECT_FALSE(lines.empty());
    if (lines.empty()) return nlohmann::json::object();
    nlohmann::json report = nlohmann::json::parse(lines.back());
    EXPECT_EQ(report.at("kind"), "final");
    return report;
}

/// The one report of `flowsketch ARGS --format json --interval 0` (an empty object, and a
/// failure, when the run fails or prints other than one final report).
inline nlohmann::json single_json_report(const std::string& args) {
    const RunResult run = run_flowsketch(args + " --format json --interval 0");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(lines_of(run.out).size(), 1u) << run.out;
    return final_json_report(run);
}

/// The section of `report` for key spec `spec` (an empty object, and a failure, when absent).
inline const nlohmann::json& key_entry(const nlohmann::json& report, const std::string& spec) {
    for (const auto& entry : report.at("keys")) {
        if (entry.at("spec") == spec) return entry;
    }
    ADD_FAILURE() << "no key " << spec << " in " << report.dump();
    static const nlohmann::json none = nlohmann::json::object();
    return none;
}

/// A JSON heavy-hitter row's 5-tuple, as the truth files key their flows.
inline TruthKey truth_key_of(const nlohmann::json& flow) {
    return TruthKey{flow.at("proto").get<int>(), flow.at("src").get<std::string>(), flow.at("dst").get<std::string>(),
                    flow.at("sport").get<int>(), flow.at("dport").get<int>()};
}

}  // namespace flowsketch::testing
