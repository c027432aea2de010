// `flowsketch merge`: snapshots of any probes and intervals, summed into
// ordinary reports (docs/snapshots.md). Every file is read and checked before
// the first report is written, so a refused file leaves no output behind.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/format_registry.hpp"
#include "reports/html/html_report_writer.hpp"
#include "reports/report_output.hpp"
#include "reports/report_writer.hpp"
#include "reports/snapshot.hpp"
#include "src/cli/range.hpp"
#include "src/commands.hpp"
#include "src/merge_verify.hpp"
#include "src/pipeline.hpp"
#include "src/verify_options.hpp"

namespace flowsketch::app {
namespace {

struct MergeOptions {
    std::vector<std::string> files;
    double interval = 0;  // 0: one report over everything
    std::uint32_t top = 0;  // 0: as the snapshots were taken
    std::string format = "text";
    std::string output;
    std::vector<std::string> keys;  // extra key specs to print; empty: all
    std::string html;               // --html: the HTML report of the merged windows
    VerifyOptions verify;
    std::vector<std::string> verify_against;  // the captures the snapshots measured
};

int fail(int code, const std::string& message) {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: merge: {}\n", message);
    return code;
}

class Refused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

reports::Snapshot read_snapshot(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Refused(fmt::format("{}: {}", path, std::strerror(errno)));
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Refused(fmt::format("{}: read error", path));
    try {
        return reports::decode_snapshot(bytes);
    } catch (const reports::SnapshotError& e) {
        throw Refused(fmt::format("{}: {}", path, e.what()));
    }
}

// What makes two snapshots' sketches not add up ("" when they do).
std::string difference(const core::WindowValue& a, const core::WindowValue& b) {
    if (a.hash_seed != b.hash_seed) return fmt::format("seed {:#018x} vs {:#018x}", a.hash_seed, b.hash_seed);
    const auto names = [](const core::WindowValue& value) {
        std::string text;
        for (const core::KeyWindow& key : value.keys) text += (text.empty() ? "" : " ") + key.spec.name();
        return text;
    };
    if (names(a) != names(b)) return fmt::format("key specs '{}' vs '{}'", names(a), names(b));
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
        const core::CountMinParams& p = a.keys[k].sketch.params();
        const core::CountMinParams& q = b.keys[k].sketch.params();
        const std::string spec = a.keys[k].spec.name();
        if (p.variant != q.variant) {
            return fmt::format("{} Count-Min variant {} vs {}", spec, core::variant_name(p.variant),
                               core::variant_name(q.variant));
        }
        if (p.width != q.width) return fmt::format("{} Count-Min width {} vs {}", spec, p.width, q.width);
        if (p.depth != q.depth) return fmt::format("{} Count-Min depth {} vs {}", spec, p.depth, q.depth);
        if (p.seed != q.seed) return fmt::format("{} Count-Min seed {:#x} vs {:#x}", spec, p.seed, q.seed);
        if (p.conservative_update != q.conservative_update) {
            return fmt::format("{} Count-Min update {} vs {}", spec, p.conservative_update ? "conservative" : "standard",
                               q.conservative_update ? "conservative" : "standard");
        }
        const auto& da = a.keys[k].distinct;
        const auto& db = b.keys[k].distinct;
        if (da && db && (da->params().width != db->params().width || da->params().depth != db->params().depth ||
                         da->params().register_bits != db->params().register_bits)) {
            return fmt::format("{} distinct sketch dimensions", spec);
        }
    }
    if (a.has_flows != b.has_flows) return "flow tracking on vs off";
    return {};
}

// Flow counts of probes measuring at the same time: every count and its
// bound add (a flow two probes saw counts once per probe), standard errors
// add in quadrature, the worst false-positive rate is kept.
void add_concurrent_flows(core::FlowCounts& sum, const core::FlowCounts& other) {
    sum.new_flows += other.new_flows;
    sum.new_undercount_bound += other.new_undercount_bound;
    sum.active += other.active;
    sum.active_stderr = std::hypot(sum.active_stderr, other.active_stderr);
    sum.active_lower += other.active_lower;
    sum.active_upper += other.active_upper;
    sum.expired += other.expired;
    sum.expired_stderr = std::hypot(sum.expired_stderr, other.expired_stderr);
    sum.ended += other.ended;
    sum.ended_undercount_bound += other.ended_undercount_bound;
    sum.fpr = std::max(sum.fpr, other.fpr);
    sum.max_fpr = std::max(sum.max_fpr, other.max_fpr);
    sum.target_fpr = std::max(sum.target_fpr, other.target_fpr);
    sum.overfilled = sum.overfilled || other.overfilled;
}

// One report's worth: each probe's windows merged in time, then the probes.
struct Bucket {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::map<std::string, reports::Snapshot> probes;  // by name: a stable order
};

reports::Report bucket_report(Bucket& bucket, bool intervals, const MergeOptions& options,
                              const std::vector<core::KeySpec>& shown, const MergeVerifier* verifier) {
    auto it = bucket.probes.begin();
    reports::Snapshot total = std::move(it->second);
    std::string probes = it->first;
    if (bucket.probes.size() > 1) {  // whose warning is whose
        for (std::string& warning : total.context.warnings) warning = probes + ": " + warning;
    }
    for (++it; it != bucket.probes.end(); ++it) {
        const reports::Snapshot& other = it->second;
        const core::FlowCounts flows = total.value.flows;
        total.value.merge(other.value);
        if (total.value.has_flows) {
            total.value.flows = flows;
            add_concurrent_flows(total.value.flows, other.value.flows);
        }
        total.context.memory_bytes += other.context.memory_bytes;
        total.context.flows.memory_bytes += other.context.flows.memory_bytes;
        total.context.flows.max_flows += other.context.flows.max_flows;
        total.context.truncated = total.context.truncated || other.context.truncated;
        for (const std::string& warning : other.context.warnings) {
            const std::string text = it->first + ": " + warning;
            if (std::find(total.context.warnings.begin(), total.context.warnings.end(), text) ==
                total.context.warnings.end()) {
                total.context.warnings.push_back(text);
            }
        }
        probes += "," + it->first;
    }
    if (options.top != 0) total.value.top_k = options.top;
    if (intervals) {
        total.value.start_ns = bucket.start_ns;
        total.value.end_ns = bucket.end_ns;
    }
    total.context.probe = probes;
    reports::Report report = reports::report_from_value(
        intervals ? reports::ReportKind::interval : reports::ReportKind::final_report, total.value, total.context);
    if (verifier != nullptr) {
        // Lists only: merged flow counts sum each probe's own lifecycle, which
        // one exact count of the captures does not reproduce.
        report.has_verify = true;
        report.verify = core::verify_window(total.value.summary(), verifier->window(bucket.start_ns),
                                            report.sketch.epsilon, report.sketch.delta, total.value.top_k);
        report.verify.memory_bytes = verifier->memory_bytes();
        report.verify.max_flows = verifier->max_entries();
    }
    if (!shown.empty()) {
        std::vector<core::KeyTops> kept;
        std::vector<core::KeyCheck> kept_checks;
        for (std::size_t k = 0; k < report.keys.size(); ++k) {
            const core::KeySpec& spec = total.value.keys[k + 1].spec;
            if (std::find(shown.begin(), shown.end(), spec) == shown.end()) continue;
            kept.push_back(std::move(report.keys[k]));
            if (k < report.verify.keys.size()) kept_checks.push_back(report.verify.keys[k]);
        }
        report.keys = std::move(kept);
        if (report.has_verify) report.verify.keys = std::move(kept_checks);
    }
    return report;
}

int run_merge(const MergeOptions& options) {
    const auto interval_ns = static_cast<std::int64_t>(std::llround(options.interval * 1e9));
    if (options.interval > 0 && interval_ns < 1000) {
        return fail(exit_usage_error, "--interval must be 0 or at least one microsecond");
    }
    if (options.verify.on() && options.verify_against.empty()) {
        return fail(exit_usage_error,
                    "--verify needs --verify-against: snapshots hold no exact counts, so give the captures the "
                    "probes measured");
    }
    std::vector<core::KeySpec> shown;
    try {
        for (const std::string& text : options.keys) shown.push_back(core::KeySpec::parse(text));
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, fmt::format("--key: {}", e.what()));
    }

    std::map<std::int64_t, Bucket> buckets;  // by start: reports in time order
    // Each probe's windows so far, and their files: a window counted twice
    // (a file given twice, a run's snapshot beside its intervals') is refused.
    struct Window {
        std::int64_t start_ns;
        std::int64_t end_ns;
        std::string path;
    };
    std::map<std::string, std::vector<Window>> windows;
    std::string first_file;
    core::WindowValue first;  // the configuration every other file must share
    try {
        for (const std::string& path : options.files) {
            reports::Snapshot snapshot = read_snapshot(path);
            core::WindowValue& value = snapshot.value;
            if (first_file.empty()) {
                first_file = path;
                first = value;
                for (const core::KeySpec& spec : shown) {
                    const auto found = std::find_if(first.keys.begin() + 1, first.keys.end(),
                                                    [&](const core::KeyWindow& key) { return key.spec == spec; });
                    if (found == first.keys.end()) {
                        throw Refused(fmt::format("--key {}: not among the key specs of {}", spec.name(), path));
                    }
                }
            } else if (const std::string differs = difference(first, value); !differs.empty()) {
                throw Refused(fmt::format("{} and {} cannot be merged: {}", first_file, path, differs));
            }
            std::int64_t start = 0;
            std::int64_t end = 0;
            if (interval_ns > 0) {
                start = value.start_ns / interval_ns * interval_ns;
                if (value.start_ns < 0 && value.start_ns % interval_ns != 0) start -= interval_ns;
                end = start + interval_ns;
                if (value.end_ns > end) {
                    throw Refused(fmt::format("{}: its window [{}, {}) s crosses a boundary of --interval {}", path,
                                              value.start_ns / 1'000'000'000, value.end_ns / 1'000'000'000,
                                              options.interval));
                }
            }
            std::vector<Window>& seen = windows[snapshot.context.probe];
            for (const Window& other : seen) {
                const bool overlap = value.start_ns < std::max(other.end_ns, other.start_ns + 1) &&
                                     other.start_ns < std::max(value.end_ns, value.start_ns + 1);
                if (overlap) {
                    throw Refused(fmt::format("{} and {} are windows of probe {} that overlap: merging them would "
                                              "count their packets twice",
                                              other.path, path, snapshot.context.probe));
                }
            }
            seen.push_back(Window{value.start_ns, value.end_ns, path});
            Bucket& bucket = buckets[start];
            bucket.start_ns = start;
            bucket.end_ns = end;
            const std::string probe = snapshot.context.probe;
            auto [at, inserted] = bucket.probes.try_emplace(probe);
            if (inserted) {
                at->second = std::move(snapshot);
            } else {
                at->second.value.merge(value);  // the same probe's windows, one after another
                at->second.context.truncated = at->second.context.truncated || snapshot.context.truncated;
            }
        }
    } catch (const Refused& e) {
        return fail(exit_runtime_error, e.what());
    } catch (const std::invalid_argument& e) {  // a merge the checks above did not foresee
        return fail(exit_runtime_error, e.what());
    }

    std::unique_ptr<MergeVerifier> verifier;
    if (options.verify.on() && !buckets.empty()) {
        std::vector<std::int64_t> starts;
        for (const auto& [start, bucket] : buckets) starts.push_back(start);
        std::vector<core::KeySpec> extra;
        for (std::size_t k = 1; k < first.keys.size(); ++k) extra.push_back(first.keys[k].spec);
        try {
            verifier = std::make_unique<MergeVerifier>(extra, options.verify.max_flows, first.hash_seed, starts,
                                                       interval_ns);
            for (const std::string& capture : options.verify_against) verifier->count(capture);
        } catch (const VerifyLimitExceeded& e) {
            return fail(exit_usage_error, e.what());
        } catch (const std::runtime_error& e) {  // CaptureError, or a damaged capture
            return fail(exit_runtime_error, fmt::format("--verify-against {}", e.what()));
        }
    }

    std::unique_ptr<reports::ReportOutput> output;
    try {
        output = options.output.empty() ? reports::ReportOutput::standard_output()
                                        : reports::ReportOutput::append_to(options.output);
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot open output {}", e.what()));
    }
    try {
        std::vector<std::unique_ptr<reports::ReportWriter>> writers;
        writers.push_back(reports::make_report_writer(options.format, *output));
        if (!options.html.empty()) {
            // Each merged interval is a point of the page's time charts, as a run's intervals are.
            reports::html::RunDescription run;
            run.inputs.push_back(options.files.size() == 1
                                     ? "snapshot " + options.files.front()
                                     : fmt::format("{} snapshots, {} ... {}", options.files.size(),
                                                   options.files.front(), options.files.back()));
            try {
                writers.push_back(std::make_unique<reports::html::HtmlReportWriter>(options.html, std::move(run)));
            } catch (const std::runtime_error& e) {
                return fail(exit_runtime_error, fmt::format("cannot write --html {}", e.what()));
            }
        }
        const std::unique_ptr<reports::ReportWriter> writer = reports::make_tee_writer(std::move(writers));
        core::VerifyVerdict verdict;
        for (auto& [start, bucket] : buckets) {
            const reports::Report report = bucket_report(bucket, interval_ns > 0, options, shown, verifier.get());
            if (report.has_verify) verdict.add(report.verify);
            writer->write(report);
        }
        writer->finish();
        return verify_exit_status(options.verify, verdict, exit_ok);
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot write reports: {}", e.what()));
    }
}

}  // namespace

void setup_merge_command(CLI::App& app, CommandRunner& runner) {
    auto options = std::make_shared<MergeOptions>();
    CLI::App* merge = app.add_subcommand(
        "merge", "Merge snapshots (--snapshot-dir) of any probes and intervals into reports");
    merge->add_option("snapshots", options->files, "Snapshot files (.fsnap)")
        ->type_name("SNAPSHOT")
        ->required();
    merge->add_option("--interval", options->interval,
                      "A report per SECONDS, aligned to multiples of it in UNIX time (0: one over all)")
        ->type_name("SECONDS")
        ->check(cli::Range(0.0, 1e9))
        ->capture_default_str();
    merge->add_option("--top", options->top, "Heavy hitters per report (default: as the snapshots were taken)")
        ->check(cli::Range(1u, 10000u));
    merge->add_option("--format", options->format, "Report format")
        ->check(CLI::IsMember(reports::report_format_names()))
        ->capture_default_str();
    merge->add_option("--key", options->keys,
                      "Print only these of the snapshots' extra key specs (repeatable; default: all)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    merge->add_option("-o,--output", options->output, "Append reports to FILE instead of standard output")
        ->type_name("FILE");
    merge->add_option("--html", options->html,
                      "Also write the HTML report of the merged windows to FILE (each merged interval a point "
                      "of its time charts)")
        ->type_name("FILE");
    add_verify_options(*merge, options->verify);
    merge->add_option("--verify-against", options->verify_against,
                      "With --verify: the capture files the snapshots measured (repeatable), counted exactly over "
                      "the merged windows")
        ->type_name("FILE")
        ->allow_extra_args(false);
    merge->callback([options, &runner] { runner = [options] { return run_merge(*options); }; });
}

}  // namespace flowsketch::app
