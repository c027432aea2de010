#include "src/lab/lab.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/sketch/random.hpp"

namespace flowsketch::app::lab {
namespace {

std::string text_of(const Value& value) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
    if (const auto* d = std::get_if<double>(&value)) {
        if (*d == 0.0) return "0";
        if (!std::isfinite(*d)) return fmt::format("{}", *d);
        const double magnitude = std::abs(*d);
        if (magnitude >= 1e-3 && magnitude < 1e5) return fmt::format("{:.4f}", *d);
        return fmt::format("{:.4e}", *d);
    }
    if (const auto* s = std::get_if<std::string>(&value)) return *s;
    return std::get<bool>(value) ? "yes" : "NO";
}

std::string json_of(const Value& value) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
    if (const auto* d = std::get_if<double>(&value)) {
        if (!std::isfinite(*d)) return "null";
        return fmt::format("{}", *d);  // shortest round-trip representation
    }
    if (const auto* s = std::get_if<std::string>(&value)) {
        std::string out = "\"";
        for (const char ch : *s) {
            if (ch == '"' || ch == '\\') out += '\\';
            if (static_cast<unsigned char>(ch) < 0x20) {
                out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
                continue;
            }
            out += ch;
        }
        return out + "\"";
    }
    return std::get<bool>(value) ? "true" : "false";
}

}  // namespace

Row::Row(std::string experiment, std::uint64_t n, std::uint64_t m, std::uint32_t k,
         std::uint32_t c, std::uint32_t rounds, std::string scheme, std::uint64_t trials,
         double observed, double expected, bool within)
    : within_(within) {
    fields_ = {
        {"experiment", std::move(experiment)},
        {"n", static_cast<std::int64_t>(n)},
        {"m", static_cast<std::int64_t>(m)},
        {"k", static_cast<std::int64_t>(k)},
        {"c", static_cast<std::int64_t>(c)},
        {"rounds", static_cast<std::int64_t>(rounds)},
        {"scheme", std::move(scheme)},
        {"trials", static_cast<std::int64_t>(trials)},
        {"observed", observed},
        {"expected", expected},
        {"within", within},
    };
}

Row& Row::add(std::string name, Value value) {
    // Extras go before "within" so the verdict stays the last text column.
    fields_.insert(fields_.end() - 1, Field{std::move(name), std::move(value)});
    return *this;
}

void print_table(const Table& table, Format format) {
    if (format == Format::json) {
        for (const Row& row : table.rows) {
            std::string line = "{";
            bool first = true;
            for (const Field& f : row.fields()) {
                if (!first) line += ",";
                first = false;
                line += fmt::format("\"{}\":{}", f.name, json_of(f.value));
            }
            fmt::print("{}}}\n", line);
        }
        return;
    }
    fmt::print("{}\n", table.title);
    if (table.rows.empty()) return;
    // Columns: every field but the hidden ones (the title states them).
    const auto& header_fields = table.rows.front().fields();
    std::vector<std::string> names;
    for (const Field& f : header_fields) {
        if (std::find(table.text_hidden.begin(), table.text_hidden.end(), f.name) ==
            table.text_hidden.end()) {
            names.push_back(f.name);
        }
    }
    std::vector<std::string> headings = names;
    for (std::string& heading : headings) {
        if (heading == "expected") heading = table.expected_heading;
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<std::size_t> widths;
    for (const auto& heading : headings) widths.push_back(heading.size());
    for (const Row& row : table.rows) {
        std::vector<std::string> line;
        for (std::size_t i = 0; i < names.size(); ++i) {
            std::string cell = "-";
            for (const Field& f : row.fields()) {
                if (f.name == names[i]) cell = text_of(f.value);
            }
            widths[i] = std::max(widths[i], cell.size());
            line.push_back(std::move(cell));
        }
        cells.push_back(std::move(line));
    }
    std::string header = " ";
    for (std::size_t i = 0; i < names.size(); ++i) {
        header += fmt::format(" {:>{}}", headings[i], widths[i]);
    }
    fmt::print("{}\n", header);
    for (const auto& line : cells) {
        std::string out = " ";
        for (std::size_t i = 0; i < names.size(); ++i) {
            out += fmt::format(" {:>{}}", line[i], widths[i]);
        }
        fmt::print("{}\n", out);
    }
    if (!table.note.empty()) fmt::print("{}\n", table.note);
    fmt::print("\n");
}

std::string fmt_title(const std::string& title, std::uint64_t trials, std::uint64_t seed) {
    return fmt::format("{} [trials {}, seed {}]", title, trials, seed);
}

std::uint64_t trial_seed(std::uint64_t seed, std::uint64_t config, std::uint64_t trial) noexcept {
    core::SplitMix64 a(seed ^ (config * 0xd1b54a32d192ed03ULL));
    const std::uint64_t base = a.next();
    core::SplitMix64 b(base ^ (trial * 0x9e3779b97f4a7c15ULL));
    return b.next();
}

double critical_value(std::uint64_t trials) noexcept {
    const double z = 3.0;
    const double nu = trials > 1 ? static_cast<double>(trials - 1) : 1.0;
    const double z3 = z * z * z;
    const double z5 = z3 * z * z;
    const double z7 = z5 * z * z;
    return z + (z3 + z) / (4 * nu) + (5 * z5 + 16 * z3 + 3 * z) / (96 * nu * nu) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * nu * nu * nu);
}

Summary summarize(const std::vector<double>& values) {
    Summary s;
    if (values.empty()) return s;
    const double n = static_cast<double>(values.size());
    for (const double v : values) s.mean += v / n;
    if (values.size() < 2) return s;
    double var = 0;
    for (const double v : values) var += (v - s.mean) * (v - s.mean);
    var /= n - 1;
    s.stderr_mean = std::sqrt(var / n);
    return s;
}

double chi_squared_tail(double x, double degrees) noexcept {
    if (x <= 0) return 1.0;
    const double a = degrees / 2.0;
    const double z = x / 2.0;
    const double log_prefix = a * std::log(z) - z - std::lgamma(a);
    if (z < a + 1.0) {
        // Series for the lower function P(a, z); Q = 1 − P.
        double term = 1.0 / a;
        double sum = term;
        for (int i = 1; i < 1000 && std::abs(term) > std::abs(sum) * 1e-15; ++i) {
            term *= z / (a + i);
            sum += term;
        }
        return std::max(0.0, 1.0 - sum * std::exp(log_prefix));
    }
    // Continued fraction for Q(a, z) (modified Lentz).
    constexpr double tiny = 1e-300;
    double b = z + 1.0 - a;
    double c = 1.0 / tiny;
    double d = 1.0 / b;
    double h = d;
    for (int i = 1; i < 1000; ++i) {
        const double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (std::abs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::abs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double step = d * c;
        h *= step;
        if (std::abs(step - 1.0) < 1e-15) break;
    }
    return std::min(1.0, std::exp(log_prefix) * h);
}

}  // namespace flowsketch::app::lab
