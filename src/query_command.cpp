// `flowsketch query`: the windows exported to ClickHouse (--clickhouse),
// merged inside ClickHouse (sumForEach over each sketch row's counters, the
// union of candidates) and printed as the reports `flowsketch merge` prints
// for the same windows: the totals, flows and context of each window go
// through the same bucket merge, the summed sketches replace the windows'.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "reports/format_registry.hpp"
#include "reports/report_output.hpp"
#include "reports/report_writer.hpp"
#include "src/cli/range.hpp"
#include "src/clickhouse_options.hpp"
#include "src/clickhouse_rollups.hpp"
#include "src/clickhouse_schema.hpp"
#include "src/clickhouse_tsv.hpp"
#include "src/commands.hpp"
#include "src/sinks/clickhouse_rows.hpp"
#include "src/snapshot_merge.hpp"

namespace flowsketch::app {
namespace {

struct QueryOptions {
    ClickHouseOptions clickhouse;
    std::string from;  // UNIX seconds or YYYY-mm-ddTHH:MM:SS[.fff]Z; empty: unbounded
    std::string to;
    std::vector<std::string> probes;
    double interval = 0;
    std::uint32_t top = 0;
    std::string format = "text";
    std::string output;
    std::vector<std::string> keys;
};

int fail(int code, const std::string& message) {
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: query: {}\n", message);
    return code;
}

// A time as nanoseconds since the epoch: UNIX seconds, or UTC ISO 8601.
std::int64_t parse_time(const std::string& option, const std::string& text) {
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(seconds) && std::fabs(seconds) < 1e10) {
        return std::llround(seconds * 1e9);
    }
    std::tm utc{};
    double fraction = 0;
    const char* rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &utc);
    if (rest != nullptr && *rest == '.') {
        char* after = nullptr;
        fraction = std::strtod(rest, &after);
        rest = after;
    }
    if (rest == nullptr || std::string(rest) != "Z") {
        throw std::invalid_argument(fmt::format(
            "{} '{}': give UNIX seconds or a UTC time as 2026-11-26T10:00:00Z", option, text));
    }
    return static_cast<std::int64_t>(::timegm(&utc)) * 1'000'000'000 + std::llround(fraction * 1e9);
}

// The bucket (report) a window start falls in, as SQL and as merge computes it.
std::string bucket_sql(std::int64_t interval_ns, std::string_view start = "start_ns") {
    return interval_ns > 0 ? fmt::format("intDiv({0}, {1}) * {1}", start, interval_ns) : "toInt64(0)";
}

// The condition choosing the probes' windows: empty for all.
std::string probe_filter(const std::vector<std::string>& probes) {
    if (probes.empty()) return "";
    std::string list;
    for (const std::string& probe : probes) list += (list.empty() ? "" : ", ") + quote_literal(probe);
    return fmt::format("probe IN ({})", list);
}

// The WHERE clause choosing the windows: by start, and by probe.
std::string window_filter(std::int64_t from_ns, std::int64_t to_ns, const std::vector<std::string>& probes) {
    std::string where = fmt::format("start_ns >= {} AND start_ns < {}", from_ns, to_ns);
    if (!probes.empty()) where += " AND " + probe_filter(probes);
    return where;
}

// The sketch rows' sums per report bucket, configuration and row, and the
// windows summed, as one SELECT: windows in `hours` and `minutes` from those
// rollups, the others' rows from sketch_rows, each whole window's once.
// PREWHERE: the counters are read only for the rows the filter keeps (WHERE
// read them all first).
std::string sketch_sums_sql(const ClickHouseClient& client, std::int64_t report_ns, const std::string& where,
                            const std::string& whole, const std::vector<ProbeSpan>& hours,
                            const std::vector<ProbeSpan>& minutes) {
    std::string raw_where = fmt::format("{} AND {}", where, whole);
    std::string parts;
    for (const auto& [rollup, spans] : {std::pair{hour_rollup, &hours}, std::pair{minute_rollup, &minutes}}) {
        if (spans->empty()) continue;
        raw_where += " AND NOT " + spans_condition(*spans, "start_ns");
        parts += fmt::format(
            "  UNION ALL\n"
            "  SELECT {0} AS bucket, probe, bucket_ns AS start_ns, {1}, row, sumMerge(total) AS total,\n"
            "    countMerge(windows) AS window_count, sumForEachMerge(counters) AS counters\n"
            "  FROM {2} WHERE {3}\n"
            "  GROUP BY bucket, probe, start_ns, {1}, row\n",
            bucket_sql(report_ns, "bucket_ns"), sketch_config_columns, client.table(rollup.table),
            spans_condition(*spans, "bucket_ns"));
    }
    return fmt::format(
        "SELECT bucket, {0}, row, sum(total), sum(window_count), sumForEach(counters) FROM (\n"
        "  SELECT {1} AS bucket, probe, start_ns, {0}, row, any(total) AS total, toUInt64(1) AS window_count,\n"
        "    any(counters) AS counters\n"
        "  FROM {2} PREWHERE {3}\n"
        "  GROUP BY bucket, probe, start_ns, {0}, row\n"
        "{4})\n"
        "GROUP BY bucket, {0}, row ORDER BY bucket, key_spec, lane, row FORMAT TabSeparated",
        sketch_config_columns, bucket_sql(report_ns), client.table(sketch_rows_table), raw_where, parts);
}

// At most this many spans of a rollup in the sums' SELECT (twice, about 80
// bytes each): beyond, the sketch rows are read, and the SELECT stays well
// inside ClickHouse's default max_query_size (256 KiB).
constexpr std::size_t max_rollup_spans = 400;

// The windows the rollup holds exactly, if its buckets fit the reports.
std::vector<ProbeSpan> rollup_spans(ClickHouseClient& client, const Rollup& rollup, std::int64_t report_ns,
                                    std::int64_t from_ns, std::int64_t to_ns, const std::vector<std::string>& probes,
                                    const std::vector<WindowIdentity>& windows, const std::vector<ProbeSpan>& taken) {
    if (!rollup_fits_reports(rollup, report_ns)) return {};
    // Buckets inside `taken` are not asked for: over days, the minutes are those at the hours' edges.
    std::string filter = probe_filter(probes);
    if (!taken.empty()) filter += (filter.empty() ? "NOT " : " AND NOT ") + spans_condition(taken, "bucket_ns");
    const std::string answer =
        client.execute(rollup_summary_sql(rollup, client.table(rollup.table), from_ns, to_ns, filter));
    std::vector<RollupSummary> summaries;
    for (const std::string_view line : tsv::lines(answer)) summaries.push_back(parse_rollup_summary(line));
    std::vector<ProbeSpan> spans = exact_rollup_spans(rollup, windows, summaries, taken);
    if (spans.size() > max_rollup_spans) spans.clear();
    return spans;
}

constexpr std::string_view interval_columns =
    "probe, start_ns, end_ns, window, hash_seed, top_k, key_specs, frames, skipped_reasons, skipped_counts, "
    "interface_names, interface_frames, interface_received, interface_dropped, interface_if_dropped, "
    "memory_bytes, key_memory_bytes, has_flows, seen_filter, idle_timeout, generations, max_flows, "
    "flows_memory_bytes, flow_packets, new_flows, new_undercount_expected, new_undercount_bound, active, "
    "active_stderr, active_lower, active_upper, expired, expired_stderr, ended, ended_undercount_bound, fill, "
    "fpr, max_fpr, target_fpr, overfilled, generations_advanced, truncated, warnings";

// A stand-in sketch for the bucket merge of totals: the real, summed sketches
// come from ClickHouse and replace it.
core::CountMinSketch placeholder_sketch() {
    core::CountMinParams params;
    params.variant = core::CountMinVariant::standard;
    params.width = 2;
    params.depth = 1;
    params.lanes = 2;
    return core::CountMinSketch(params);
}

// A candidate key's counts over the windows of a bucket that hold it, summed
// as merging the windows sums them (WindowValue::merge): exact counts add;
// the upper bounds add only if every window of the bucket holds the key, as a
// window without it does not bound its count there.
struct WindowsOfCandidate {
    core::FlowKey key;
    core::CandidateCount sum{0, 0};  // over `windows` windows, the upper bounds' sum saturating
    std::size_t windows = 0;

    core::CandidateCount merged(std::size_t bucket_windows) const {
        return {sum.exact, windows == bucket_windows ? sum.upper : UINT64_MAX};
    }
};

// One row of `intervals` as a snapshot without sketches.
reports::Snapshot window_of_row(const std::vector<std::string_view>& f) {
    std::size_t i = 0;
    reports::Snapshot snapshot;
    reports::SnapshotContext& context = snapshot.context;
    core::WindowValue& value = snapshot.value;
    context.probe = tsv::text(f[i++]);
    value.start_ns = tsv::i64(f[i++]);
    value.end_ns = tsv::i64(f[i++]);
    value.window = tsv::text(f[i++]) == "run" ? core::Window::run : core::Window::interval;
    value.hash_seed = tsv::u64(f[i++]);
    value.top_k = static_cast<std::uint32_t>(tsv::u64(f[i++]));
    for (const std::string& spec : tsv::text_array(f[i++])) {
        core::KeyWindow key{core::KeySpec::parse(spec), placeholder_sketch(), {}, std::nullopt, {}, {}};
        value.keys.push_back(std::move(key));
    }
    value.frames = tsv::u64(f[i++]);
    const std::vector<std::string> reasons = tsv::text_array(f[i++]);
    const std::vector<std::uint64_t> counts = tsv::u64_array(f[i++]);
    for (std::size_t r = 0; r < reasons.size() && r < counts.size(); ++r) {
        value.skipped.push_back(core::NamedCount{reasons[r], counts[r]});
    }
    const std::vector<std::string> names = tsv::text_array(f[i++]);
    const std::vector<std::uint64_t> frames = tsv::u64_array(f[i++]);
    const std::vector<std::uint64_t> received = tsv::u64_array(f[i++]);
    const std::vector<std::uint64_t> dropped = tsv::u64_array(f[i++]);
    const std::vector<std::uint64_t> if_dropped = tsv::u64_array(f[i++]);
    for (std::size_t n = 0; n < names.size(); ++n) {
        value.interfaces.push_back(core::InterfaceCounts{names[n], frames.at(n), received.at(n), dropped.at(n),
                                                         if_dropped.at(n)});
    }
    context.memory_bytes = tsv::u64(f[i++]);
    context.key_memory_bytes = tsv::u64_array(f[i++]);
    value.has_flows = tsv::u64(f[i++]) != 0;
    context.flows.seen_filter = tsv::text(f[i++]);
    context.flows.idle_timeout = tsv::real(f[i++]);
    context.flows.generations = static_cast<std::uint32_t>(tsv::u64(f[i++]));
    context.flows.max_flows = tsv::u64(f[i++]);
    context.flows.memory_bytes = tsv::u64(f[i++]);
    core::FlowCounts& flows = value.flows;
    flows.packets = tsv::u64(f[i++]);
    flows.new_flows = tsv::u64(f[i++]);
    flows.new_undercount_expected = tsv::real(f[i++]);
    flows.new_undercount_bound = tsv::real(f[i++]);
    flows.active = tsv::real(f[i++]);
    flows.active_stderr = tsv::real(f[i++]);
    flows.active_lower = tsv::real(f[i++]);
    flows.active_upper = tsv::real(f[i++]);
    flows.expired = tsv::real(f[i++]);
    flows.expired_stderr = tsv::real(f[i++]);
    flows.ended = tsv::u64(f[i++]);
    flows.ended_undercount_bound = tsv::real(f[i++]);
    flows.fill = tsv::real(f[i++]);
    flows.fpr = tsv::real(f[i++]);
    flows.max_fpr = tsv::real(f[i++]);
    flows.target_fpr = tsv::real(f[i++]);
    flows.overfilled = tsv::u64(f[i++]) != 0;
    flows.generations_advanced = tsv::u64(f[i++]);
    context.truncated = tsv::u64(f[i++]) != 0;
    context.warnings = tsv::text_array(f[i++]);
    return snapshot;
}

// A sketch configuration as the sketch rows' key states it.
struct SketchConfig {
    std::string variant;
    std::uint32_t width = 0;
    std::uint32_t depth = 0;
    std::uint64_t sketch_seed = 0;
    std::uint64_t hash_seed = 0;
    bool conservative = false;
    double stated_epsilon = 0;

    friend bool operator==(const SketchConfig&, const SketchConfig&) = default;
    std::string text() const {
        return fmt::format("{} {}x{} seed {:#x} hash seed {:#x}{} epsilon {}", variant, width, depth, sketch_seed,
                           hash_seed, conservative ? " conservative" : "", stated_epsilon);
    }
};

// The summed sketch of one key spec in one bucket, being filled row by row.
struct SummedSketch {
    SketchConfig config;
    std::vector<std::uint64_t> counters;  // [row][column][lane], lanes 2
    std::uint64_t totals[2] = {0, 0};
    std::vector<std::uint64_t> windows;  // [lane][row]: the windows summed in each row
};

int run_query(const QueryOptions& options) {
    ClickHouseEndpoint endpoint;
    std::int64_t from_ns = std::numeric_limits<std::int64_t>::min();
    std::int64_t to_ns = std::numeric_limits<std::int64_t>::max();
    std::vector<core::KeySpec> shown;
    const auto interval_ns = static_cast<std::int64_t>(std::llround(options.interval * 1e9));
    try {
        endpoint = clickhouse_endpoint(options.clickhouse);
        if (!options.from.empty()) from_ns = parse_time("--from", options.from);
        if (!options.to.empty()) to_ns = parse_time("--to", options.to);
        if (from_ns >= to_ns) throw std::invalid_argument("--from must be before --to");
        if (options.interval > 0 && interval_ns < 1000) {
            throw std::invalid_argument("--interval must be 0 or at least one microsecond");
        }
        for (const std::string& probe : options.probes) {
            if (!reports::valid_probe_name(probe)) {
                throw std::invalid_argument(
                    fmt::format("--probe '{}': a probe name is 1 to 64 of A-Z a-z 0-9 . _ : -", probe));
            }
        }
        for (const std::string& text : options.keys) shown.push_back(core::KeySpec::parse(text));
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, e.what());
    }
    ClickHouseClient client(endpoint, std::chrono::milliseconds(std::llround(options.clickhouse.timeout * 1000)));
    const std::string where = window_filter(from_ns, to_ns, options.probes);
    // Only windows whose `intervals` row exists are whole (it is inserted last).
    const std::string whole = fmt::format("(probe, start_ns) IN (SELECT probe, start_ns FROM {} WHERE {})",
                                          client.table(intervals_table), where);
    const std::string bucket = bucket_sql(interval_ns);

    MergeBuckets buckets(interval_ns);
    // Per bucket and key spec: the summed sketch; per bucket, key spec, lane: the candidates.
    std::map<std::pair<std::int64_t, std::string>, SummedSketch> sketches;
    std::map<std::tuple<std::int64_t, std::string, unsigned>, std::map<std::string, WindowsOfCandidate>> candidates;
    std::map<std::string, SketchConfig> config_of_spec;
    try {
        // Each window once: a retried insert that had reached the server may have left a twin row.
        const std::string windows = client.execute(fmt::format(
            "SELECT {} FROM {} WHERE {} ORDER BY start_ns, probe LIMIT 1 BY probe, start_ns FORMAT TabSeparated",
            interval_columns, client.table(intervals_table), where));
        std::vector<WindowIdentity> identities;
        for (const std::string_view line : tsv::lines(windows)) {
            const std::vector<std::string_view> f = tsv::fields(line);
            if (f.size() != 43) throw std::runtime_error(fmt::format("ClickHouse returned {} columns of a window, not 43", f.size()));
            reports::Snapshot snapshot = window_of_row(f);
            WindowIdentity& identity = identities.emplace_back();
            identity.probe = snapshot.context.probe;
            identity.start_ns = snapshot.value.start_ns;
            for (const core::KeyWindow& key : snapshot.value.keys) identity.key_specs.push_back(key.spec.name());
            const std::string source = fmt::format("window {}@{}", snapshot.context.probe, snapshot.value.start_ns);
            buckets.add(std::move(snapshot), source);
        }
        if (buckets.empty()) return fail(exit_runtime_error, "no window in ClickHouse matches --from, --to and --probe");
        for (const core::KeySpec& spec : shown) {
            const auto& keys = buckets.first().keys;
            if (std::find_if(keys.begin() + 1, keys.end(), [&](const core::KeyWindow& key) { return key.spec == spec; }) ==
                keys.end()) {
                return fail(exit_runtime_error, fmt::format("--key {}: not among the windows' key specs", spec.name()));
            }
        }
        // The merge, inside ClickHouse: each row's counters summed over the
        // bucket's windows, grouped by the configuration so that two never
        // add; whole hours and minutes from the rollups where they hold
        // exactly the windows.
        const std::vector<ProbeSpan> hours =
            rollup_spans(client, hour_rollup, interval_ns, from_ns, to_ns, options.probes, identities, {});
        const std::vector<ProbeSpan> minutes =
            rollup_spans(client, minute_rollup, interval_ns, from_ns, to_ns, options.probes, identities, hours);
        const std::string sums = client.execute(sketch_sums_sql(client, interval_ns, where, whole, hours, minutes));
        for (const std::string_view line : tsv::lines(sums)) {
            const std::vector<std::string_view> f = tsv::fields(line);
            if (f.size() != 14) throw std::runtime_error("ClickHouse returned a sketch row of another shape");
            const std::int64_t at = tsv::i64(f[0]);
            const std::string spec = tsv::text(f[1]);
            const auto lane = static_cast<unsigned>(tsv::u64(f[2]));
            SketchConfig config{tsv::text(f[3]), static_cast<std::uint32_t>(tsv::u64(f[4])),
                                static_cast<std::uint32_t>(tsv::u64(f[5])), tsv::u64(f[6]), tsv::u64(f[7]),
                                tsv::u64(f[8]) != 0, tsv::real(f[9])};
            const auto row = static_cast<std::uint32_t>(tsv::u64(f[10]));
            auto [known, first_time] = config_of_spec.try_emplace(spec, config);
            if (!first_time && !(known->second == config)) {
                throw MergeRefused(fmt::format("key spec {}: windows of two sketch configurations in the range "
                                               "({} and {}) cannot be merged",
                                               spec, known->second.text(), config.text()));
            }
            if (lane > 1 || row >= config.depth || config.width < 2) {
                throw std::runtime_error(fmt::format("key spec {}: a sketch row ({}, {}) outside its sketch", spec, lane, row));
            }
            SummedSketch& sketch = sketches[{at, spec}];
            if (sketch.counters.empty()) {
                sketch.config = config;
                sketch.counters.assign(std::size_t{config.width} * config.depth * 2, 0);
                sketch.windows.assign(2 * config.depth, 0);
            }
            const std::vector<std::uint64_t> counters = tsv::u64_array(f[13]);
            if (counters.size() != config.width) {  // sumForEach would have padded a shorter array
                throw MergeRefused(fmt::format("key spec {}: a summed row of {} counters in a sketch of width {}", spec,
                                               counters.size(), config.width));
            }
            const std::size_t base = std::size_t{row} * config.width * 2;
            for (std::size_t c = 0; c < counters.size(); ++c) sketch.counters[base + c * 2 + lane] = counters[c];
            sketch.totals[lane] = tsv::u64(f[11]);
            sketch.windows[lane * config.depth + row] = tsv::u64(f[12]);
        }
        // Each candidate once per bucket: its counts in each window holding it
        // (once, whatever twins a retried insert left) summed in ClickHouse,
        // and how many windows hold it. The upper bounds' sum saturates as
        // merge's does: a window's bound may be UINT64_MAX (none).
        const std::string keys = client.execute(fmt::format(
            "SELECT bucket, key_spec, lane, key_hex, sum(exact),\n"
            "  if(sum(toFloat64(upper)) >= 18446744073709551615.0, 18446744073709551615, sum(upper)), count()\n"
            "FROM (\n"
            "  SELECT {} AS bucket, key_spec, lane, key_hex, probe, start_ns, any(exact) AS exact, any(upper) AS upper\n"
            "  FROM {} PREWHERE {} AND {}\n"
            "  GROUP BY bucket, key_spec, lane, key_hex, probe, start_ns)\n"
            "GROUP BY bucket, key_spec, lane, key_hex FORMAT TabSeparated",
            bucket, client.table(candidates_table), where, whole));
        for (const std::string_view line : tsv::lines(keys)) {
            const std::vector<std::string_view> f = tsv::fields(line);
            core::FlowKey key;
            if (f.size() != 7 || !parse_key_hex(f[3], key)) throw std::runtime_error("ClickHouse returned a bad candidate");
            WindowsOfCandidate& counted = candidates[{tsv::i64(f[0]), tsv::text(f[1]),
                                                      static_cast<unsigned>(tsv::u64(f[2]))}][std::string(f[3])];
            counted.key = key;
            counted.sum = core::CandidateCount{tsv::u64(f[4]), tsv::u64(f[5])};
            counted.windows = static_cast<std::size_t>(tsv::u64(f[6]));
        }
    } catch (const ClickHouseError& e) {
        return fail(exit_runtime_error, e.what());
    } catch (const MergeRefused& e) {
        return fail(exit_runtime_error, e.what());
    } catch (const std::exception& e) {
        return fail(exit_runtime_error, e.what());
    }

    std::vector<reports::Report> reports;
    try {
        for (auto& [start, group] : buckets.buckets()) {
            reports::Snapshot total = merge_bucket(group);
            for (core::KeyWindow& key : total.value.keys) {
                const std::string spec = key.spec.name();
                const auto found = sketches.find({start, spec});
                if (found == sketches.end()) {
                    throw std::runtime_error(fmt::format(
                        "key spec {}: no sketch rows for the windows from {} s in sketch_rows, nor a rollup "
                        "holding exactly these windows",
                        spec, static_cast<double>(start) / 1e9));
                }
                const SummedSketch& summed = found->second;
                // Every whole window in every row: a window whose rows are gone would be missing from the sums.
                const auto [fewest, most] = std::minmax_element(summed.windows.begin(), summed.windows.end());
                if (*fewest != group.windows || *most != group.windows) {
                    throw std::runtime_error(fmt::format(
                        "key spec {}: sketch rows of {} of the {} windows from {} s in ClickHouse; the others' are "
                        "neither in sketch_rows nor in a rollup holding exactly their windows",
                        spec, *fewest, group.windows, static_cast<double>(start) / 1e9));
                }
                core::CountMinParams params;
                params.variant = summed.config.variant == "standard" ? core::CountMinVariant::standard
                                                                     : core::CountMinVariant::kirsch_mitzenmacher;
                params.width = summed.config.width;
                params.depth = summed.config.depth;
                params.lanes = 2;
                params.seed = summed.config.sketch_seed;
                params.conservative_update = summed.config.conservative;
                params.stated_epsilon = summed.config.stated_epsilon;
                if (summed.config.hash_seed != total.value.hash_seed) {
                    throw MergeRefused(fmt::format("key spec {}: sketch rows of hash seed {:#x} in windows of seed {:#x}",
                                                   spec, summed.config.hash_seed, total.value.hash_seed));
                }
                key.sketch = core::CountMinSketch(params);
                std::copy(summed.counters.begin(), summed.counters.end(), key.sketch.mutable_counters().begin());
                key.sketch.mutable_totals()[0] = summed.totals[0];
                key.sketch.mutable_totals()[1] = summed.totals[1];
                for (unsigned lane = 0; lane < 2; ++lane) {
                    std::vector<WindowsOfCandidate> united;
                    for (const auto& [hex, counted] : candidates[{start, spec, lane}]) united.push_back(counted);
                    std::sort(united.begin(), united.end(), [](const WindowsOfCandidate& a, const WindowsOfCandidate& b) {
                        return core::compare_keys(a.key, b.key) < 0;
                    });
                    key.candidates[lane].clear();
                    key.candidate_counts[lane].clear();
                    for (const WindowsOfCandidate& counted : united) {
                        key.candidates[lane].push_back(counted.key);
                        key.candidate_counts[lane].push_back(counted.merged(group.windows));
                    }
                }
            }
            reports.push_back(merged_report(std::move(total), group, interval_ns > 0, options.top, shown));
        }
    } catch (const std::exception& e) {
        return fail(exit_runtime_error, e.what());
    }

    std::unique_ptr<reports::ReportOutput> output;
    try {
        output = options.output.empty() ? reports::ReportOutput::standard_output()
                                        : reports::ReportOutput::append_to(options.output);
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot open output {}", e.what()));
    }
    try {
        const std::unique_ptr<reports::ReportWriter> writer = reports::make_report_writer(options.format, *output);
        for (const reports::Report& report : reports) writer->write(report);
        writer->finish();
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, fmt::format("cannot write reports: {}", e.what()));
    }
    return exit_ok;
}

}  // namespace

void setup_query_command(CLI::App& app, CommandRunner& runner) {
    auto options = std::make_shared<QueryOptions>();
    CLI::App* query = app.add_subcommand(
        "query", "Merge the windows exported to ClickHouse (--clickhouse) inside ClickHouse into reports");
    add_clickhouse_options(*query, options->clickhouse, true, false);
    query->add_option("--from", options->from, "Windows starting at or after T (UNIX seconds or 2026-11-26T10:00:00Z)")
        ->type_name("T");
    query->add_option("--to", options->to, "Windows starting before T")->type_name("T");
    query->add_option("--probe", options->probes, "Only this probe's windows (repeatable; default: all)")
        ->type_name("NAME")
        ->allow_extra_args(false);
    query->add_option("--interval", options->interval,
                      "A report per SECONDS, aligned to multiples of it in UNIX time (0: one over all)")
        ->type_name("SECONDS")
        ->check(cli::Range(0.0, 1e9))
        ->capture_default_str();
    query->add_option("--top", options->top, "Heavy hitters per report (default: as the windows were measured)")
        ->check(cli::Range(1u, 10000u));
    query->add_option("--format", options->format, "Report format")
        ->check(CLI::IsMember(reports::report_format_names()))
        ->capture_default_str();
    query->add_option("--key", options->keys,
                      "Print only these of the windows' extra key specs (repeatable; default: all)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    query->add_option("-o,--output", options->output, "Append reports to FILE instead of standard output")
        ->type_name("FILE");
    query->callback([options, &runner] { runner = [options] { return run_query(*options); }; });
}

}  // namespace flowsketch::app
