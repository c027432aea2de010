// Reading ClickHouse's TabSeparated output: fields, escaped strings, numbers
// and arrays of them. Each function throws std::runtime_error naming what it
// could not read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowsketch::app::tsv {

/// The lines of a response (without the final newline's empty line).
std::vector<std::string_view> lines(std::string_view text);
/// The tab-separated fields of one line.
std::vector<std::string_view> fields(std::string_view line);

std::string text(std::string_view field);
std::uint64_t u64(std::string_view field);
std::int64_t i64(std::string_view field);
double real(std::string_view field);
std::vector<std::uint64_t> u64_array(std::string_view field);
std::vector<std::string> text_array(std::string_view field);

}  // namespace flowsketch::app::tsv
