// `flowsketch lab`: the pieces shared by the experiments — options, result
// rows and tables, their text/JSON rendering, and a deterministic parallel
// trial runner.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace flowsketch::app::lab {

enum class Format { text, json };

struct LabOptions {
    std::uint64_t trials = 0;  ///< 0: each experiment's default
    bool paper_trials = false;  ///< with trials 0: as many as the paper ran
    std::uint64_t seed = 1;
    Format format = Format::text;
    unsigned threads = 2;
};

/// One field of a row: integer, real, text or yes/no.
using Value = std::variant<std::int64_t, double, std::string, bool>;

struct Field {
    std::string name;
    Value value;
};

/// A row: the fixed fields every experiment reports (experiment, n, m, k, c,
/// rounds, scheme, trials, observed, expected, within), then extras.
class Row {
public:
    Row(std::string experiment, std::uint64_t n, std::uint64_t m, std::uint32_t k,
        std::uint32_t c, std::uint32_t rounds, std::string scheme, std::uint64_t trials,
        double observed, double expected, bool within);

    Row& add(std::string name, Value value);
    bool within() const noexcept { return within_; }
    const std::vector<Field>& fields() const noexcept { return fields_; }

private:
    std::vector<Field> fields_;
    bool within_;
};

struct Table {
    std::string title;
    std::string note;  ///< printed under the table in text mode
    /// Fields left out of the text table (still in JSON), e.g. ones the title states.
    std::vector<std::string> text_hidden = {"experiment"};
    /// The text table's name for the `expected` column: "bound" where the
    /// reference is an upper bound the observed value must stay under.
    std::string expected_heading = "expected";
    std::vector<Row> rows;
};

/// "title (trials T, seed S)".
std::string fmt_title(const std::string& title, std::uint64_t trials, std::uint64_t seed);

/// Text: title line, aligned columns, note. JSON: one object per row per line.
void print_table(const Table& table, Format format);

/// Seed of trial `trial` of configuration `config` of an experiment:
/// independent of thread count and of the order trials run in.
std::uint64_t trial_seed(std::uint64_t seed, std::uint64_t config, std::uint64_t trial) noexcept;

/// Runs fn(trial) for trial in [0, trials) on up to `threads` threads and
/// returns the results in trial order (so aggregates are deterministic).
template <class Result>
std::vector<Result> run_trials(std::uint64_t trials, unsigned threads,
                               const std::function<Result(std::uint64_t)>& fn);

/// How many estimated standard errors count as "within 3 standard errors"
/// when the standard error comes from `trials` samples: the Student-t quantile
/// with trials − 1 degrees of freedom at the two-sided level of 3σ (0.9973),
/// by the Cornish–Fisher expansion (≈ 3.96 at 10 trials, 3.06 at 100, → 3).
double critical_value(std::uint64_t trials) noexcept;

/// Mean and standard error of the mean.
struct Summary {
    double mean = 0;
    double stderr_mean = 0;
};
Summary summarize(const std::vector<double>& values);

/// P(X ≥ x) for X chi-squared with `degrees` degrees of freedom (the upper
/// regularised incomplete gamma function Q(degrees/2, x/2)).
double chi_squared_tail(double x, double degrees) noexcept;

}  // namespace flowsketch::app::lab

#include "src/lab/lab_impl.hpp"
