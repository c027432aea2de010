// A numeric range check for command-line options whose errors name what was
// wrong: CLI11's own Range answers "not in range" for a value that is not a
// number at all, and prints bounds such as 1e-7 as 0.000000.
#pragma once

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

namespace flowsketch::cli {

template <typename T>
CLI::Validator Range(T min_value, T max_value) {
    std::ostringstream description;
    description << CLI::detail::type_name<T>() << " in [" << min_value << " - " << max_value << "]";
    return CLI::Validator(
        [min_value, max_value](std::string& text) -> std::string {
            T value{};
            if (!CLI::detail::lexical_cast(text, value)) {
                return "'" + text + "' is not " +
                       (std::is_integral_v<T> ? "a whole number" : "a number");
            }
            if (value < min_value || value > max_value) {
                std::ostringstream out;
                out << text << " is out of range: it must lie in [" << min_value << ", "
                    << max_value << "]";
                return out.str();
            }
            return {};
        },
        description.str());
}

}  // namespace flowsketch::cli
