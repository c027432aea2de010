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
#include "src/snapshot_merge.hpp"
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

// --verify of a merged bucket: its lists against the exact counts of the
// captures. Lists only: merged flow counts sum each probe's own lifecycle,
// which one exact count of the captures does not reproduce.
void add_verify(reports::Report& report, const reports::Snapshot& total, std::int64_t bucket_start,
                std::uint32_t top, const std::vector<core::KeySpec>& shown, const MergeVerifier& verifier) {
    core::WindowValue value = total.value;
    if (top != 0) value.top_k = top;
    report.has_verify = true;
    report.verify = core::verify_window(value.summary(), verifier.window(bucket_start), report.sketch.epsilon,
                                        report.sketch.delta, value.top_k);
    report.verify.memory_bytes = verifier.memory_bytes();
    report.verify.max_flows = verifier.max_entries();
    if (shown.empty()) return;
    std::vector<core::KeyCheck> kept;
    for (std::size_t k = 0; k < report.verify.keys.size() && k + 1 < value.keys.size(); ++k) {
        if (std::find(shown.begin(), shown.end(), value.keys[k + 1].spec) != shown.end()) {
            kept.push_back(report.verify.keys[k]);
        }
    }
    report.verify.keys = std::move(kept);
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

    MergeBuckets buckets(interval_ns);
    try {
        for (const std::string& path : options.files) {
            reports::Snapshot snapshot = read_snapshot(path);
            if (buckets.empty()) {
                for (const core::KeySpec& spec : shown) {
                    const auto found = std::find_if(snapshot.value.keys.begin() + 1, snapshot.value.keys.end(),
                                                    [&](const core::KeyWindow& key) { return key.spec == spec; });
                    if (found == snapshot.value.keys.end()) {
                        throw Refused(fmt::format("--key {}: not among the key specs of {}", spec.name(), path));
                    }
                }
            }
            buckets.add(std::move(snapshot), path);
        }
    } catch (const Refused& e) {
        return fail(exit_runtime_error, e.what());
    } catch (const MergeRefused& e) {
        return fail(exit_runtime_error, e.what());
    }

    std::unique_ptr<MergeVerifier> verifier;
    if (options.verify.on() && !buckets.empty()) {
        std::vector<std::int64_t> starts;
        for (const auto& [start, bucket] : buckets.buckets()) starts.push_back(start);
        const core::WindowValue& first = buckets.first();
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
        for (auto& [start, bucket] : buckets.buckets()) {
            reports::Snapshot total = merge_bucket(bucket);
            reports::Report report = merged_report(total, bucket, interval_ns > 0, options.top, shown);
            if (verifier) add_verify(report, total, bucket.start_ns, options.top, shown, *verifier);
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
