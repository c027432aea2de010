// The default command: replay capture files (-r) through the pipeline.
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/cli/range.hpp"
#include "src/clickhouse_options.hpp"
#include "src/commands.hpp"
#include "src/progress_meter.hpp"
#include "reports/format_registry.hpp"
#include "reports/html/html_report_writer.hpp"
#include "reports/prometheus.hpp"
#include "src/live_runner.hpp"
#include "src/replay.hpp"
#include "src/pipeline.hpp"
#include "src/privileges.hpp"
#include "src/sinks/clickhouse_exporter.hpp"
#include "src/sinks/metrics_publisher.hpp"
#include "src/sinks/metrics_server.hpp"
#include "src/sinks/snapshot_pool.hpp"
#include "src/sinks/snapshot_writer.hpp"
#include "src/verify_options.hpp"

namespace flowsketch::app {
namespace {

// Snapshots kept for the next windows: room for a delivered ClickHouse batch
// and the files being written, which come back together; and spares made
// ahead for a replay whose windows close faster than the sinks give them back
// (two per window with both sinks).
constexpr std::size_t snapshot_pool_capacity = ClickHouseExporter::max_batch_windows + 4;
constexpr std::size_t snapshot_pool_spares = 4;

struct MeasureOptions {
    std::vector<std::string> files;
    std::vector<std::string> interfaces;
    bool no_promiscuous = false;
    int snaplen = 262144;
    int buffer_size = 0;
    bool immediate = false;
    std::string user;  // -Z
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
    std::vector<std::string> keys;  // --key: key specs beside the 5-tuple
    std::string format = "text";
    double idle_timeout = 60.0;
    std::uint64_t max_flows = 1'000'000;
    double flow_fpr = 0.001;
    std::string seen_filter = "blocked";
    std::uint32_t generations = 8;
    bool no_flows = false;     // heavy hitters only: no flow lifecycle
    std::string output;        // empty: standard output
    bool also_stdout = false;  // with --output: print to standard output as well
    std::string html;          // --html: the page rewritten at each report
    std::string listen;        // ADDR:PORT of the Prometheus endpoint
    std::uint32_t metrics_staleness = reports::ExpositionOptions{}.staleness_intervals;
    std::uint64_t metrics_series_cap = reports::ExpositionOptions{}.heavy_hitter_series_cap;
    bool realtime = false;     // replay paced by packet timestamps
    double speed = 0;          // replay pace: packet time runs this many times wall time
    unsigned threads = 1;
    bool quiet = false;     // no progress line
    bool progress = false;  // a progress line even live, or when stderr is not a terminal
    std::string tunnels = "inner";
    std::uint64_t max_memory = std::uint64_t{1} << 30;  // the measurement state
    std::string probe;          // empty: the host name
    std::uint64_t seed = core::MeasurementConfig{}.hash_seed;
    std::string snapshot_dir;   // --snapshot-dir: a snapshot file per window
    VerifyOptions verify;
    ClickHouseOptions clickhouse;  // --clickhouse: each window exported
};

volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) { stop_requested = 1; }

// No SA_RESTART: a wait for a pipe (-r -) ends, and the loop sees the stop
// (ReadStatus::interrupted).
void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

// --probe, or the host name (up to its first dot when the whole is no probe name).
std::string probe_name(const std::string& given) {
    if (!given.empty()) {
        if (!reports::valid_probe_name(given)) {
            throw std::invalid_argument(fmt::format(
                "--probe '{}': a probe name is 1 to 64 of A-Z a-z 0-9 . _ : -", given));
        }
        return given;
    }
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
    std::string name(host.data());
    if (!reports::valid_probe_name(name)) name = name.substr(0, name.find('.'));
    if (!reports::valid_probe_name(name)) {
        throw std::invalid_argument(fmt::format("the host name '{}' is no probe name: give --probe NAME", name));
    }
    return name;
}

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& word : words) {
        if (!out.empty()) out.push_back(' ');
        out += word;
    }
    return out;
}

// Two -r inputs that are one pipe (stdin and /dev/stdin, a FIFO named twice)
// would each get part of its bytes: the message naming them, or "".
std::string pipe_read_twice(const std::vector<std::string>& files) {
    std::vector<std::pair<std::pair<dev_t, ino_t>, std::string>> pipes;
    for (const std::string& file : files) {
        struct stat status {};
        const int found =
            file == "-" ? ::fstat(STDIN_FILENO, &status) : ::stat(file.c_str(), &status);
        if (found != 0 || !S_ISFIFO(status.st_mode)) continue;
        const std::pair<dev_t, ino_t> id{status.st_dev, status.st_ino};
        for (const auto& [seen, name] : pipes) {
            if (seen == id) {
                return fmt::format("-r {} and -r {} are the same pipe, which can be read only once",
                                   name, file);
            }
        }
        pipes.emplace_back(id, file);
    }
    return {};
}

int fail(int code, const std::string& message) {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: {}\n", message);
    return code;
}

// Frames of a link type the decoder does not know are counted, not dropped
// silently: say so once, up front.
void warn_if_not_decoded(const std::string& input, int link_type) {
    if (capture::is_supported_link_type(link_type)) return;
    fmt::print(stderr,
               "flowsketch: warning: {}: link type {} is not decoded; its frames are counted as "
               "unsupported_link_type\n",
               input, link_type);
}

core::CountMinParams sketch_params(const MeasureOptions& options) {
    const auto variant = options.variant == "standard" ? core::CountMinVariant::standard
                                                       : core::CountMinVariant::kirsch_mitzenmacher;
    // A given depth keeps the width ε alone implies (δ then follows from both);
    // a given width states the guarantee at its own ε.
    core::CountMinParams params =
        options.depth != 0
            ? core::CountMinParams::classic_for_error(options.epsilon, options.delta, variant)
            : core::CountMinParams::for_error(options.epsilon, options.delta, variant);
    if (options.width != 0) {
        params.width = variant == core::CountMinVariant::kirsch_mitzenmacher
                           ? core::next_prime(options.width)
                           : options.width;
        params.stated_epsilon = 0;
    }
    if (options.depth != 0) params.depth = options.depth;
    params.conservative_update = options.conservative;
    return params;
}

std::string format_bytes(std::uint64_t bytes) {
    constexpr std::array<const char*, 4> units = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double value = static_cast<double>(bytes) / 1024.0;
    std::size_t unit = 0;
    for (; value >= 1024.0 && unit + 1 < units.size(); ++unit) value /= 1024.0;
    return fmt::format("{:.1f} {}", value, units[unit]);
}

// The state's size follows from ε, δ, --max-flows, --flow-fpr and --top, and a
// slip of a digit asks for gigabytes (KM at δ = 1e-12: 8.2 GiB, from its
// full-collision term). Refused before anything is allocated, with the way out.
void check_memory(const MeasureOptions& options, const core::MeasurementConfig& measurement) {
    const core::FlowMeasurement::Footprint need = core::FlowMeasurement::footprint(measurement);
    if (need.total() <= options.max_memory) return;
    const core::CountMinParams& sketch = measurement.sketch;
    std::string advice;
    if (need.fixed_bytes >= options.max_memory) {
        advice = "the caches alone exceed it (no option sizes them)";
    } else if (need.distinct_bytes > std::max({need.sketch_bytes, need.lifecycle_bytes, need.candidate_bytes})) {
        advice = "drop a :distinct key spec";
    } else if (need.candidate_bytes > std::max(need.sketch_bytes, need.lifecycle_bytes)) {
        advice = "lower --top";
    } else if (need.sketch_bytes >= need.lifecycle_bytes) {
        advice = "raise --epsilon or --delta";
        if (sketch.variant == core::CountMinVariant::kirsch_mitzenmacher && options.width == 0 &&
            options.depth == 0) {
            core::MeasurementConfig alternative = measurement;
            alternative.sketch = core::CountMinParams::for_error(options.epsilon, options.delta,
                                                                 core::CountMinVariant::standard);
            const core::FlowMeasurement::Footprint with_standard =
                core::FlowMeasurement::footprint(alternative);
            // Only when it is the way out: the whole state fits with it.
            if (2 * with_standard.sketch_bytes < need.sketch_bytes &&
                with_standard.total() <= options.max_memory) {
                advice = fmt::format("--cms standard meets the same --epsilon and --delta in {}",
                                     format_bytes(with_standard.sketch_bytes));
            }
        }
    } else {
        advice = "lower --max-flows or raise --flow-fpr";
    }
    const std::size_t specs = measurement.extra_keys.size() + 1;
    std::string parts = specs == 1 ? fmt::format("the Count-Min sketch ({} x {} cells: {})", sketch.width,
                                                 sketch.depth, format_bytes(need.sketch_bytes))
                                   : fmt::format("the Count-Min sketches of {} key specs ({} x {} cells each: {})",
                                                 specs, sketch.width, sketch.depth, format_bytes(need.sketch_bytes));
    if (measurement.track_flows) {
        parts += fmt::format(", the seen filter ({})", format_bytes(need.lifecycle_bytes));
    }
    if (need.distinct_bytes > 0) {
        parts += fmt::format(", the distinct counts ({})", format_bytes(need.distinct_bytes));
    }
    parts += fmt::format(", the heavy-hitter candidates ({}) and the caches ({})",
                         format_bytes(need.candidate_bytes), format_bytes(need.fixed_bytes));
    throw std::invalid_argument(fmt::format("{} need {}, above --max-memory {}; {}, or raise --max-memory",
                                            parts, format_bytes(need.total()),
                                            format_bytes(options.max_memory), advice));
}

// The key specs measured beside the 5-tuple, in the order given: `5tuple`
// names the lists every report has; a spec given twice is a mistake.
std::vector<core::KeySpec> extra_key_specs(const std::vector<std::string>& texts) {
    constexpr std::size_t max_keys = 16;
    std::vector<core::KeySpec> specs;
    for (const std::string& text : texts) {
        const core::KeySpec spec = core::KeySpec::parse(text);
        if (spec.is_identity()) continue;
        if (std::find(specs.begin(), specs.end(), spec) != specs.end()) {
            throw std::invalid_argument("key spec '" + text + "' is given twice");
        }
        specs.push_back(spec);
    }
    if (specs.size() > max_keys) throw std::invalid_argument(fmt::format("at most {} key specs", max_keys));
    return specs;
}

// Words after the options are a BPF filter (as in tcpdump), so `-r a.pcap
// b.pcap` makes b.pcap a filter: when that filter fails, say what was meant.
std::string file_in_filter_hint(const std::vector<std::string>& filter_words) {
    if (filter_words.empty()) return {};
    std::error_code error;
    if (!std::filesystem::is_regular_file(filter_words.front(), error)) return {};
    return fmt::format(" ('{}' is a file: give each capture file its own -r, as in -r A -r B)",
                       filter_words.front());
}

// A replay that counted nothing says so in one line, and fails unless the
// input held nothing to count (empty, or nothing passed the filter).
int counted_status(const ReplayStream& stream, const Pipeline& pipeline) {
    const std::string why = stream.nothing_counted();
    if (why.empty()) return exit_ok;
    const bool empty_input = pipeline.frames_total() == 0 && stream.uncounted().empty();
    fmt::print(stderr, "flowsketch: {}\n", why);
    return empty_input ? exit_ok : exit_runtime_error;
}

// Replays capture files in order as one stream; intervals in packet time.
int run_replay(const MeasureOptions& options, const std::string& filter, Pipeline& pipeline,
               boost::asio::io_context& io, ProgressMeter* progress) {
    const double speed = options.realtime ? 1.0 : options.speed;
    // Open every file (and compile the filter against each link type) before
    // reading any: a bad file or filter fails before the first report.
    std::vector<std::unique_ptr<capture::PcapFileSource>> sources;
    try {
        for (const auto& path : options.files) {
            sources.push_back(std::make_unique<capture::PcapFileSource>(path, filter));
            // (A pcapng file's interfaces are warned about one by one, by ReplayStream.)
            if (!sources.back()->reads_interfaces()) warn_if_not_decoded(path, sources.back()->link_type());
        }
    } catch (const capture::FilterError& e) {
        return fail(exit_usage_error, e.what() + file_in_filter_hint(options.filter_words));
    } catch (const capture::CaptureError& e) {
        return fail(exit_runtime_error, e.what());
    }

    ReplayStream stream(sources, pipeline, !filter.empty());
    stream.set_progress(progress);
    if (!options.listen.empty() || speed > 0) {
        PacedReplay replay(io, stream, pipeline, speed, options.count, !options.listen.empty());
        replay.start();
        io.run();
        return replay.stopped() ? exit_ok : counted_status(stream, pipeline);
    }
    install_stop_handlers();
    // In batches: one call walks many records of the read block, and the
    // decoder runs on them in a tight loop. As many as the pipeline hands the
    // measurement at once, so no batch is split.
    std::array<capture::Frame, core::FlowMeasurement::chunk_packets> frames;
    int link = 0;
    std::size_t interface = Pipeline::no_interface;
    while (stop_requested == 0) {
        std::span<capture::Frame> batch(frames);
        if (options.count != 0) {
            const std::uint64_t left = options.count - pipeline.frames_total();
            if (left == 0) break;
            if (left < batch.size()) batch = batch.first(static_cast<std::size_t>(left));
        }
        const std::size_t n = stream.next_batch(batch, link, interface);
        if (n == 0 && stream.interrupted()) continue;  // the loop's condition tells a stop
        if (n == 0) break;
        pipeline.on_frames(batch.first(n), link, stream.frame_storage(), interface);
        if (progress != nullptr) {
            progress->update(pipeline.frames_total(), [&stream] { return stream.bytes_read(); });
        }
    }
    if (stop_requested == 0) stream.note_nothing_counted();
    pipeline.finish();
    return stop_requested != 0 ? exit_ok : counted_status(stream, pipeline);
}

// Captures live interfaces on one Asio event loop until SIGINT/SIGTERM or -c.
int run_live(const MeasureOptions& options, const std::string& filter, Pipeline& pipeline,
             boost::asio::io_context& io, reports::ReportOutput* file_output, ProgressMeter* progress) {
    std::vector<std::unique_ptr<capture::PcapLiveSource>> sources;
    try {
        for (const auto& name : options.interfaces) {
            capture::LiveOptions live;
            live.interface = name;
            live.snaplen = options.snaplen;
            live.promiscuous = !options.no_promiscuous;
            live.buffer_size = options.buffer_size;
            live.immediate = options.immediate;
            live.filter = filter;
            sources.push_back(std::make_unique<capture::PcapLiveSource>(live));
            warn_if_not_decoded("interface " + name, sources.back()->link_type());
        }
        if (!options.user.empty()) drop_privileges(options.user);
    } catch (const capture::FilterError& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {  // CaptureError, or -Z failing
        return fail(exit_runtime_error, e.what());
    }

    LiveRunnerConfig runner_config;
    runner_config.interval_seconds = options.interval;
    runner_config.count = options.count;
    LiveRunner runner(io, pipeline, sources, runner_config);
    runner.on_hangup = [file_output] {
        if (file_output != nullptr) file_output->reopen();
    };
    runner.start();
    // The runner stops the loop at the end, and with it this timer.
    boost::asio::steady_timer progress_timer(io);
    std::function<void()> redraw = [&] {
        progress_timer.expires_after(std::chrono::milliseconds(100));
        progress_timer.async_wait([&](const boost::system::error_code& error) {
            if (error) return;
            progress->show(0, pipeline.frames_total());
            redraw();
        });
    };
    if (progress != nullptr) redraw();
    io.run();
    if (!runner.error().empty()) return fail(exit_runtime_error, runner.error());
    return exit_ok;
}

// A progress line on stderr: replays draw it when stderr is a terminal,
// live capture only with --progress (which also forces it); --quiet never.
std::unique_ptr<ProgressMeter> make_progress_meter(const MeasureOptions& options) {
    if (options.quiet) return nullptr;
    const bool live = !options.interfaces.empty();
    if (!options.progress && (live || ::isatty(STDERR_FILENO) == 0)) return nullptr;
    if (live) return std::make_unique<ProgressMeter>(stderr, ProgressMeter::Input::live, 0);
    std::uint64_t total = 0;
    for (const std::string& path : options.files) {
        std::error_code error;
        if (path == "-" || !std::filesystem::is_regular_file(path, error)) {
            return std::make_unique<ProgressMeter>(stderr, ProgressMeter::Input::pipe, 0);
        }
        total += std::filesystem::file_size(path, error);
    }
    return std::make_unique<ProgressMeter>(stderr, ProgressMeter::Input::files, total);
}

// --clickhouse: the exporter, spilling to --snapshot-dir's clickhouse-undelivered/.
std::unique_ptr<ClickHouseExporter> make_clickhouse_exporter(const MeasureOptions& options,
                                                             const core::MeasurementConfig& measurement,
                                                             SnapshotPool& pool) {
    for (const core::KeySpec& spec : measurement.extra_keys) {
        if (spec.counts_distinct()) {
            throw std::invalid_argument(fmt::format(
                "--key {}: distinct counts are not exported to ClickHouse; drop :distinct or --clickhouse",
                spec.name()));
        }
    }
    ClickHouseExporterOptions exporter;
    exporter.endpoint = clickhouse_endpoint(options.clickhouse);
    exporter.queue = options.clickhouse.queue;
    exporter.timeout = std::chrono::milliseconds(std::llround(options.clickhouse.timeout * 1000));
    if (!options.snapshot_dir.empty()) exporter.spill_directory = options.snapshot_dir + "/clickhouse-undelivered";
    exporter.sync_spills = !options.interfaces.empty();
    exporter.wait_when_full = options.interfaces.empty();
    exporter.pool = &pool;
    return std::make_unique<ClickHouseExporter>(exporter);
}

int run_measure(const MeasureOptions& options) {
    if (options.files.empty() && options.interfaces.empty()) {
        return fail(exit_usage_error,
                    "no input: give capture files with -r FILE or interfaces with -i IFACE");
    }
    if (!options.files.empty() && !options.interfaces.empty()) {
        return fail(exit_usage_error, "-r and -i cannot be combined: replay files or capture live");
    }
    if (std::count(options.files.begin(), options.files.end(), "-") > 1) {
        return fail(exit_usage_error, "-r - (standard input) can be given only once");
    }
    if (const std::string twice = pipe_read_twice(options.files); !twice.empty()) {
        return fail(exit_usage_error, twice);
    }
    if (!options.user.empty() && options.interfaces.empty()) {
        return fail(exit_usage_error, "-Z drops privileges after opening interfaces: it needs -i");
    }
    PipelineConfig config;
    try {
        config.measurement.extra_keys = extra_key_specs(options.keys);
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, fmt::format("--key: {}", e.what()));
    }
    config.packet_time_intervals = options.interfaces.empty();
    config.interface_names = options.interfaces;
    config.interval_seconds = options.interval;
    config.threads = options.threads;
    config.measurement.hash_seed = options.seed;
    config.verify = options.verify.on();
    config.verify_max_flows = options.verify.max_flows;
    try {
        config.probe = probe_name(options.probe);
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, e.what());
    }
    config.limits.decapsulate_tunnels = options.tunnels == "inner";
    for (const core::KeySpec& spec : config.measurement.extra_keys) {
        if (spec.keeps_tunnel() && !config.limits.decapsulate_tunnels) {
            return fail(exit_usage_error,
                        fmt::format("--key {}: the tunnel endpoints and ids are read when tunnels are looked "
                                    "into; it needs --tunnels inner",
                                    spec.name()));
        }
    }
    config.measurement.top_k = options.top;
    config.measurement.track_flows = !options.no_flows;
    config.measurement.lifecycle.max_flows = options.max_flows;
    config.measurement.lifecycle.target_fpr = options.flow_fpr;
    config.measurement.lifecycle.idle_timeout_ns =
        static_cast<std::int64_t>(std::llround(options.idle_timeout * 1e9));
    config.measurement.lifecycle.generations = options.generations;
    config.measurement.lifecycle.kind =
        options.seen_filter == "two-choice" ? core::SeenFilterKind::two_choice
        : options.seen_filter == "standard" ? core::SeenFilterKind::standard
                                            : core::SeenFilterKind::blocked;
    // One event loop for live capture, paced replays and the metrics endpoint.
    boost::asio::io_context io;
    std::unique_ptr<MetricsServer> metrics_server;
    reports::ExpositionOptions exposition_options;
    exposition_options.staleness_intervals = options.metrics_staleness;
    exposition_options.heavy_hitter_series_cap = options.metrics_series_cap;
    reports::PrometheusExposition exposition(exposition_options);
    std::unique_ptr<Pipeline> pipeline;
    std::unique_ptr<reports::ReportOutput> stdout_output;
    std::unique_ptr<reports::ReportOutput> file_output;
    std::unique_ptr<reports::ReportWriter> writer;
    // Before the sinks, which give snapshots back to it until they finish.
    SnapshotPool snapshot_pool(snapshot_pool_capacity, snapshot_pool_spares);
    std::unique_ptr<SnapshotWriter> snapshots;
    std::unique_ptr<ClickHouseExporter> clickhouse;
    std::unique_ptr<ProgressMeter> progress = make_progress_meter(options);
    try {
        config.measurement.sketch = sketch_params(options);
        check_memory(options, config.measurement);
        std::vector<std::unique_ptr<reports::ReportWriter>> writers;
        if (options.output.empty() || options.also_stdout) {
            stdout_output = reports::ReportOutput::standard_output();
            writers.push_back(reports::make_report_writer(options.format, *stdout_output));
        }
        if (!options.output.empty()) {
            try {
                file_output = reports::ReportOutput::append_to(options.output);
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(fmt::format("cannot open output {}", e.what()));
            }
            writers.push_back(reports::make_report_writer(options.format, *file_output));
        }
        if (!options.html.empty()) {
            reports::html::RunDescription run;
            for (const std::string& file : options.files) run.inputs.push_back(file == "-" ? "standard input" : "file " + file);
            for (const std::string& name : options.interfaces) run.inputs.push_back("interface " + name);
            run.filter = join(options.filter_words);
            try {
                writers.push_back(std::make_unique<reports::html::HtmlReportWriter>(options.html, std::move(run)));
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(fmt::format("cannot write --html {}", e.what()));
            }
        }
        if (!options.listen.empty()) {
            metrics_server = std::make_unique<MetricsServer>(io, options.listen);
            writers.push_back(std::make_unique<MetricsPublisher>(*metrics_server, exposition));
        }
        writer = reports::make_tee_writer(std::move(writers));
        if (!options.snapshot_dir.empty()) {
            SnapshotWriterOptions snapshot_options;
            snapshot_options.directory = options.snapshot_dir;
            snapshot_options.wait_when_full = options.interfaces.empty();
            snapshot_options.sync_each = !options.interfaces.empty();
            snapshot_options.pool = &snapshot_pool;
            snapshots = std::make_unique<SnapshotWriter>(snapshot_options);
            config.snapshots = snapshots.get();
        }
        if (!options.clickhouse.url.empty()) {
            clickhouse = make_clickhouse_exporter(options, config.measurement, snapshot_pool);
            config.clickhouse = clickhouse.get();
        }
        if (snapshots || clickhouse) config.snapshot_pool = &snapshot_pool;
        if (progress != nullptr) writer = make_progress_clearing_writer(std::move(writer), *progress);
        pipeline = std::make_unique<Pipeline>(config, *writer);
        if (snapshots) {
            // The writer encodes each snapshot into buffers of a sketch's size (the copy
            // itself lands in a recycled snapshot, see SnapshotPool). Kept in the heap
            // rather than mapped and unmapped each time, they are not faulted in anew for
            // every snapshot (docs/snapshots.md). The measurement's own tables, allocated
            // above, are not affected.
            ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
            ::mallopt(M_TRIM_THRESHOLD, 128 << 20);
        }
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, e.what());
    }

    const std::string filter = join(options.filter_words);
    try {
        const int status = !options.interfaces.empty()
                               ? run_live(options, filter, *pipeline, io, file_output.get(), progress.get())
                               : run_replay(options, filter, *pipeline, io, progress.get());
        if (status == exit_ok) writer->finish();
        if (clickhouse) {
            clickhouse->finish();
            const reports::ClickHouseExportCounts counts = clickhouse->counts();
            if (counts.undelivered > 0 && status == exit_ok) {
                return fail(exit_runtime_error,
                            fmt::format("{} of {} intervals could not be delivered to ClickHouse at {} ({} spilled{})",
                                        counts.undelivered, counts.undelivered + counts.delivered,
                                        options.clickhouse.url, counts.spilled,
                                        clickhouse->options().spill_directory.empty()
                                            ? ""
                                            : " to " + clickhouse->options().spill_directory));
            }
        }
        if (snapshots) {
            snapshots->finish();
            if (!snapshots->sync_error().empty() && status == exit_ok) {
                return fail(exit_runtime_error, snapshots->sync_error());
            }
            const std::uint64_t failed = snapshots->failed();
            if (failed > 0 && status == exit_ok) {
                return fail(exit_runtime_error, fmt::format("{} of {} snapshots could not be written to {}", failed,
                                                            failed + snapshots->written(), options.snapshot_dir));
            }
        }
        return verify_exit_status(options.verify, pipeline->verify_verdict(), status);
    } catch (const VerifyLimitExceeded& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot write reports: {}", e.what()));
    }
}

}  // namespace

void setup_measure_command(CLI::App& app, CommandRunner& runner) {
    auto options = std::make_shared<MeasureOptions>();
    app.add_option("-r,--read", options->files,
                   "Capture file to replay (pcap or pcapng; - reads standard input); "
                   "repeat -r for several files, which form one stream in order")
        ->type_name("FILE")
        ->expected(1)  // -r A tcp: "tcp" starts the filter, not a second file
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("-i,--interface", options->interfaces,
                   "Capture live from IFACE (repeat for several; 'any' on Linux)")
        ->type_name("IFACE")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("-p,--no-promiscuous-mode", options->no_promiscuous,
                 "Do not put interfaces into promiscuous mode");
    app.add_option("-s,--snapshot-length", options->snaplen, "Bytes to capture per frame")
        ->type_name("SNAPLEN")
        ->check(cli::Range(64, 262144))
        ->capture_default_str();
    app.add_option("-B,--buffer-size", options->buffer_size,
                   "Kernel capture buffer in bytes (0: libpcap's default)")
        ->check(cli::Range(0, 1 << 30));
    app.add_flag("--immediate", options->immediate,
                 "Deliver each frame at once instead of in blocks (lower latency, more wake-ups)");
    app.add_option("-Z,--relinquish-privileges", options->user,
                   "After opening interfaces and outputs, drop root privileges to USER")
        ->type_name("USER");
    app.add_option("-c,--count", options->count, "Stop after COUNT frames (0: no limit)")
        ->type_name("COUNT");
    app.add_option("--interval", options->interval,
                   "Report every SECONDS (packet time for files, wall clock live; 0: final only)")
        ->type_name("SECONDS")
        ->check(cli::Range(0.0, 1e9))
        ->capture_default_str();
    app.add_option("--epsilon", options->epsilon,
                   "Count-Min additive error, as a fraction of the window's total")
        ->check(cli::Range(1e-7, 0.5))
        ->capture_default_str();
    app.add_option("--delta", options->delta, "Count-Min failure probability")
        ->check(cli::Range(1e-12, 0.5))
        ->capture_default_str();
    app.add_option("--width", options->width,
                   "Count-Min width (overrides --epsilon; rounded up to a prime for km)")
        ->check(cli::Range(2u, 1u << 28));
    app.add_option("--depth", options->depth, "Count-Min depth (overrides --delta)")
        ->check(cli::Range(1u, 64u));
    app.add_option("--cms", options->variant,
                   "Count-Min index scheme: km (Kirsch-Mitzenmacher, prime width) or standard")
        ->check(CLI::IsMember({"km", "standard"}))
        ->capture_default_str();
    app.add_flag("--conservative", options->conservative, "Count-Min conservative update");
    app.add_option("--top", options->top, "Heavy hitters per report")
        ->check(cli::Range(1u, 10000u))
        ->capture_default_str();
    std::string formats;
    for (const reports::FormatEntry& entry : reports::report_formats()) {
        formats += fmt::format("{}{} ({})", formats.empty() ? "" : ", ", entry.name, entry.description);
    }
    app.add_option("--key", options->keys,
                   "Also rank keys by SPEC (repeatable): 5tuple, src, dst, pair, src/N[,M], dst/N[,M] "
                   "(IPv4 and IPv6 prefix lengths; IPv6 /64 unless given), sport, dport, proto, vlan, "
                   "vni (VXLAN/Geneve VNI or GRE key), tunnel (outermost tunnel's endpoints and type); "
                   "SPEC+vlan also keeps the outer VLAN id (dst+vlan), SPEC+vni the tunnel id (dst+vni; not 5tuple); "
                   "SPEC:distinct=FIELD also counts each key's distinct src, dst, sport, dport or proto")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--format", options->format, "Report format: " + formats)
        ->check(CLI::IsMember(reports::report_format_names()))
        ->capture_default_str();
    CLI::Option* listen = app.add_option("--listen", options->listen,
                   "Serve Prometheus metrics at http://ADDR:PORT/metrics (':PORT' = 127.0.0.1)")
        ->type_name("ADDR:PORT");
    app.add_option("--metrics-staleness", options->metrics_staleness,
                   "Keep a heavy hitter's metrics this many intervals after it left the top")
        ->type_name("INTERVALS")
        ->check(cli::Range(0u, 1000u))
        ->capture_default_str()
        ->needs(listen);
    app.add_option("--metrics-series-cap", options->metrics_series_cap,
                   "At most N series per heavy-hitter metric (the top first)")
        ->type_name("N")
        ->check(cli::Range(std::uint64_t{1}, std::uint64_t{reports::max_heavy_hitter_series_cap}))
        ->capture_default_str()
        ->needs(listen);
    app.add_flag("--realtime", options->realtime,
                 "Replay files at the pace of their timestamps (with --listen: for dashboards)");
    app.add_option("--speed", options->speed,
                   "Replay files X times as fast as their timestamps (0: as fast as possible)")
        ->type_name("X")
        ->check(cli::Range(0.0, 1e9));
    // The lifecycle is a large share of a replay's time (docs/benchmarks.md):
    // its seen filter is the largest structure, and a flood writes a new line
    // of it per packet. An operator who only asks who is eating the link skips it.
    CLI::Option* no_flows = app.add_flag(
        "--no-flows", options->no_flows,
        "Heavy hitters only: no flow lifecycle (new, active, expired, ended flows) and no seen "
        "filter; faster, and reports carry no flows section");
    app.add_option("--idle-timeout", options->idle_timeout,
                   "A flow with no packet for SECONDS expires (packet time for files)")
        ->type_name("SECONDS")
        ->check(cli::Range(0.001, 1e7))
        ->capture_default_str()
        ->excludes(no_flows);
    app.add_option("--max-flows", options->max_flows,
                   "Concurrently active flows to size the seen filter for (fixes its memory)")
        ->check(cli::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
        ->capture_default_str()
        ->excludes(no_flows);
    app.add_option("--flow-fpr", options->flow_fpr,
                   "Target false-positive rate of the seen filter at --max-flows")
        ->check(cli::Range(1e-9, 0.5))
        ->capture_default_str()
        ->excludes(no_flows);
    app.add_option("--seen-filter", options->seen_filter,
                   "Seen-flow filter: blocked (one cache line per flow), standard, or "
                   "two-choice (power of two choices)")
        ->check(CLI::IsMember({"blocked", "standard", "two-choice"}))
        ->capture_default_str()
        ->excludes(no_flows);
    app.add_option("--generations", options->generations,
                   "Generations per idle timeout: flows expire within timeout/G after it")
        ->check(cli::Range(1u, 14u))
        ->capture_default_str()
        ->excludes(no_flows);
    app.add_option("--tunnels", options->tunnels,
                   "Key tunnelled traffic (GRE, ERSPAN, VXLAN, Geneve, IP in IP, GTP-U) by its "
                   "innermost flow (inner) or by the outermost IP header (outer)")
        ->check(CLI::IsMember({"inner", "outer"}))
        ->capture_default_str();
    app.add_option("--threads", options->threads,
                   "1: one thread; 2: update the sketches on a second thread while the first "
                   "reads and decodes (same reports)")
        ->check(cli::Range(1u, 2u))
        ->capture_default_str();
    app.add_option("--max-memory", options->max_memory,
                   "Refuse a measurement state (Count-Min sketch, seen filter, heavy-hitter "
                   "candidates, caches) larger than SIZE (e.g. 512MiB, 4GiB): a mistyped --delta "
                   "or --max-flows fails at once instead of exhausting memory")
        ->type_name("SIZE")
        ->transform(CLI::AsSizeValue(false))
        ->default_str("1GiB");
    app.add_option("--probe", options->probe,
                   "Name this probe in every report and snapshot (default: the host name)")
        ->type_name("NAME");
    app.add_option("--seed", options->seed,
                   "Hash seed of every sketch; probes whose snapshots are merged must share it")
        ->type_name("SEED")
        ->default_str(fmt::format("{:#x}", core::MeasurementConfig{}.hash_seed));
    app.add_option("--snapshot-dir", options->snapshot_dir,
                   "Write each interval's (or, with --interval 0, the run's) snapshot to DIR, for "
                   "`flowsketch merge`")
        ->type_name("DIR");
    add_clickhouse_options(app, options->clickhouse, false, true);
    CLI::Option* quiet = app.add_flag(
        "-q,--quiet", options->quiet,
        "No progress line (replays show one on stderr when it is a terminal)");
    app.add_flag("--progress", options->progress,
                 "A progress line on stderr even live or when stderr is not a terminal")
        ->excludes(quiet);
    app.add_option("-o,--output", options->output,
                   "Append reports to FILE instead of standard output (whole reports only)")
        ->type_name("FILE");
    app.add_flag("--stdout", options->also_stdout,
                 "With --output: print reports to standard output as well");
    app.add_option("--html", options->html,
                   "Also write a self-contained HTML page with plots to FILE, rewritten at each report")
        ->type_name("FILE");
    add_verify_options(app, options->verify);
    app.add_option("expression", options->filter_words,
                   "BPF filter expression, as in tcpdump (e.g. tcp port 443)");
    app.callback([options, &runner, &app] {
        if (app.get_subcommands().empty()) runner = [options] { return run_measure(*options); };
    });
}

}  // namespace flowsketch::app
