// The default command: replay capture files (-r) through the pipeline.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "src/commands.hpp"
#include "src/pipeline.hpp"

namespace flowsketch::app {
namespace {

struct MeasureOptions {
    std::vector<std::string> files;
    std::vector<std::string> filter_words;
    std::uint64_t count = 0;  // 0 = no limit
    double interval = 10.0;
    double epsilon = 0.001;
    double delta = 0.001;
    std::uint32_t width = 0;  // 0 = from epsilon
    std::uint32_t depth = 0;  // 0 = from delta
    std::string variant = "km";
    bool conservative = false;
    std::uint32_t top = 10;
    std::string format = "text";
    std::string output;        // empty: standard output
    bool also_stdout = false;  // with --output: print to standard output as well
};

volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) { stop_requested = 1; }

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& word : words) {
        if (!out.empty()) out.push_back(' ');
        out += word;
    }
    return out;
}

int fail(int code, const std::string& message) {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: {}\n", message);
    return code;
}

core::CountMinParams sketch_params(const MeasureOptions& options) {
    const auto variant = options.variant == "standard" ? core::CountMinVariant::standard
                                                       : core::CountMinVariant::kirsch_mitzenmacher;
    core::CountMinParams params = core::CountMinParams::for_error(options.epsilon, options.delta, variant);
    if (options.width != 0) {
        params.width = variant == core::CountMinVariant::kirsch_mitzenmacher
                           ? core::next_prime(options.width)
                           : options.width;
    }
    if (options.depth != 0) params.depth = options.depth;
    params.conservative_update = options.conservative;
    return params;
}

int run_measure(const MeasureOptions& options) {
    if (options.files.empty()) {
        return fail(exit_usage_error, "no input: give one or more capture files with -r FILE");
    }
    PipelineConfig config;
    config.interval_seconds = options.interval;
    config.measurement.top_k = options.top;
    std::unique_ptr<Pipeline> pipeline;
    std::unique_ptr<reports::ReportOutput> stdout_output;
    std::unique_ptr<reports::ReportOutput> file_output;
    std::unique_ptr<reports::ReportWriter> writer;
    try {
        config.measurement.sketch = sketch_params(options);
        const reports::ReportFormat format = reports::parse_report_format(options.format);
        std::vector<std::unique_ptr<reports::ReportWriter>> writers;
        if (options.output.empty() || options.also_stdout) {
            stdout_output = reports::ReportOutput::standard_output();
            writers.push_back(reports::make_report_writer(format, *stdout_output));
        }
        if (!options.output.empty()) {
            file_output = reports::ReportOutput::append_to(options.output);
            writers.push_back(reports::make_report_writer(format, *file_output));
        }
        writer = reports::make_tee_writer(std::move(writers));
        pipeline = std::make_unique<Pipeline>(config, *writer);
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot open output {}", e.what()));
    }

    // Open every file (and compile the filter against each link type) before
    // reading any: a bad file or filter fails before the first report.
    const std::string filter = join(options.filter_words);
    std::vector<std::unique_ptr<capture::PcapFileSource>> sources;
    try {
        for (const auto& path : options.files) {
            sources.push_back(std::make_unique<capture::PcapFileSource>(path, filter));
            const int link = sources.back()->link_type();
            if (!capture::is_supported_link_type(link)) {
                fmt::print(stderr,
                           "flowsketch: warning: {}: link type {} is not decoded; its frames are "
                           "counted as unsupported_link_type\n",
                           path, link);
            }
        }
    } catch (const capture::FilterError& e) {
        return fail(exit_usage_error, e.what());
    } catch (const capture::CaptureError& e) {
        return fail(exit_runtime_error, e.what());
    }

    install_stop_handlers();
    try {
        capture::Frame frame;
        bool done = false;
        for (auto& source : sources) {
            if (done) break;
            const int link = source->link_type();
            for (;;) {
                if (options.count != 0 && pipeline->frames_total() >= options.count) {
                    done = true;
                    break;
                }
                if (stop_requested != 0) {
                    done = true;
                    break;
                }
                const capture::ReadStatus status = source->next(frame);
                if (status == capture::ReadStatus::frame) {
                    pipeline->on_frame(frame, link);
                    continue;
                }
                if (status == capture::ReadStatus::damaged) {
                    const std::string message =
                        fmt::format("{}: {} (the packets before the damage are counted)",
                                    source->path(), source->damage_message());
                    fmt::print(stderr, "flowsketch: warning: {}\n", message);
                    pipeline->note_damage(message);
                }
                break;
            }
        }
        pipeline->finish();
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot write reports: {}", e.what()));
    }
    return exit_ok;
}

}  // namespace

void setup_measure_command(CLI::App& app, CommandRunner& runner) {
    auto options = std::make_shared<MeasureOptions>();
    app.add_option("-r,--read", options->files,
                   "Capture file to replay (pcap or pcapng; repeat: files form one stream in order)")
        ->type_name("FILE")
        ->allow_extra_args(false);  // -r A tcp: "tcp" starts the filter, not a second file
    app.add_option("-c,--count", options->count, "Stop after COUNT frames (0: no limit)")
        ->type_name("COUNT");
    app.add_option("--interval", options->interval,
                   "Report every SECONDS of packet time (0: only the final report)")
        ->type_name("SECONDS")
        ->check(CLI::Range(0.0, 1e9))
        ->capture_default_str();
    app.add_option("--epsilon", options->epsilon,
                   "Count-Min additive error, as a fraction of the window's total")
        ->check(CLI::Range(1e-7, 0.5))
        ->capture_default_str();
    app.add_option("--delta", options->delta, "Count-Min failure probability")
        ->check(CLI::Range(1e-12, 0.5))
        ->capture_default_str();
    app.add_option("--width", options->width,
                   "Count-Min width (overrides --epsilon; rounded up to a prime for km)")
        ->check(CLI::Range(2u, 1u << 28));
    app.add_option("--depth", options->depth, "Count-Min depth (overrides --delta)")
        ->check(CLI::Range(1u, 64u));
    app.add_option("--cms", options->variant,
                   "Count-Min index scheme: km (Kirsch-Mitzenmacher, prime width) or standard")
        ->check(CLI::IsMember({"km", "standard"}))
        ->capture_default_str();
    app.add_flag("--conservative", options->conservative, "Count-Min conservative update");
    app.add_option("--top", options->top, "Heavy hitters per report")
        ->check(CLI::Range(1u, 10000u))
        ->capture_default_str();
    app.add_option("--format", options->format,
                   "Report format: text, json (JSON Lines) or csv (a row per heavy hitter)")
        ->check(CLI::IsMember({"text", "json", "csv"}))
        ->capture_default_str();
    app.add_option("-o,--output", options->output,
                   "Append reports to FILE instead of standard output (whole reports only)")
        ->type_name("FILE");
    app.add_flag("--stdout", options->also_stdout,
                 "With --output: print reports to standard output as well");
    app.add_option("expression", options->filter_words,
                   "BPF filter expression, as in tcpdump (e.g. tcp port 443)");
    app.callback([options, &runner, &app] {
        if (app.get_subcommands().empty()) runner = [options] { return run_measure(*options); };
    });
}

}  // namespace flowsketch::app
