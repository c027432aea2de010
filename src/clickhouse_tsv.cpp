#include "src/clickhouse_tsv.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace flowsketch::app::tsv {
namespace {

[[noreturn]] void bad(std::string_view what, std::string_view field) {
    throw std::runtime_error(fmt::format("ClickHouse returned '{}' where {} was expected",
                                         field.substr(0, 64), what));
}

char unescaped(char c) {
    switch (c) {
        case 't': return '\t';
        case 'n': return '\n';
        case 'r': return '\r';
        case '0': return '\0';
        case 'b': return '\b';
        case 'f': return '\f';
        default: return c;  // \\ \' and any other character stand for themselves
    }
}

}  // namespace

std::vector<std::string_view> lines(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        out.push_back(text.substr(0, end));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return out;
}

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    for (;;) {
        const std::size_t tab = line.find('\t');
        out.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos) return out;
        line.remove_prefix(tab + 1);
    }
}

std::string text(std::string_view field) {
    std::string out;
    out.reserve(field.size());
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 1 < field.size()) {
            out.push_back(unescaped(field[++i]));
        } else {
            out.push_back(field[i]);
        }
    }
    return out;
}

std::uint64_t u64(std::string_view field) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error != std::errc{} || end != field.data() + field.size()) bad("an unsigned integer", field);
    return value;
}

std::int64_t i64(std::string_view field) {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error != std::errc{} || end != field.data() + field.size()) bad("an integer", field);
    return value;
}

double real(std::string_view field) {
    if (field == "nan" || field == "-nan") return std::numeric_limits<double>::quiet_NaN();
    if (field == "inf" || field == "+inf") return std::numeric_limits<double>::infinity();
    if (field == "-inf") return -std::numeric_limits<double>::infinity();
    const std::string copy(field);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size()) bad("a number", field);
    return value;
}

std::vector<std::uint64_t> u64_array(std::string_view field) {
    if (field.size() < 2 || field.front() != '[' || field.back() != ']') bad("an array", field);
    std::vector<std::uint64_t> out;
    const char* at = field.data() + 1;
    const char* const end = field.data() + field.size() - 1;
    while (at < end) {
        std::uint64_t value = 0;
        const auto [next, error] = std::from_chars(at, end, value);
        if (error != std::errc{} || (next != end && *next != ',')) bad("an array of integers", field);
        out.push_back(value);
        at = next == end ? end : next + 1;
    }
    return out;
}

std::vector<std::string> text_array(std::string_view field) {
    if (field.size() < 2 || field.front() != '[' || field.back() != ']') bad("an array", field);
    std::vector<std::string> out;
    std::size_t i = 1;
    const std::size_t end = field.size() - 1;
    while (i < end) {
        if (field[i] != '\'') bad("an array of strings", field);
        std::string item;
        for (++i; i < end && field[i] != '\''; ++i) {
            if (field[i] == '\\' && i + 1 < end) {
                item.push_back(unescaped(field[++i]));
            } else {
                item.push_back(field[i]);
            }
        }
        if (i >= end) bad("an array of strings", field);
        out.push_back(std::move(item));
        ++i;  // the closing quote
        if (i < end && field[i] == ',') ++i;
    }
    return out;
}

}  // namespace flowsketch::app::tsv
