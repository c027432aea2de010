// The verify section of a report (--verify, docs/verify.md) in each format:
// one place per format, called by the format's renderer only when the report
// has one, so reports without --verify stay as they were.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "reports/report.hpp"

namespace flowsketch::reports {

/// `,"verify":{...}` for the JSON object.
std::string verify_json(const Report& report);
/// The "Verify" section of the text report.
std::string verify_text(const Report& report);
/// The section as (key spec, metric, value) triples: CSV's `verify` rows.
struct VerifyMetric {
    std::string key;
    std::string metric;
    std::string value;
};
std::vector<VerifyMetric> verify_metrics(const Report& report);

}  // namespace flowsketch::reports
