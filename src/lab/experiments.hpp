// The lab's experiments. Each returns its tables; the command prints them and
// turns "every row within tolerance" into the exit code.
#pragma once

#include <vector>

#include "src/lab/lab.hpp"

namespace flowsketch::app::lab {

/// Kirsch–Mitzenmacher §8: standard / partitioned / double / enhanced double
/// hashing Bloom filters, n = 5000, m/n ∈ {4, 8, 12, 16}. Default 1000 trials.
std::vector<Table> bloom_experiment(const LabOptions& options);

/// Lumetta–Mitzenmacher Tables 1–3: online and offline greedy two-choice
/// filters, n = 10 000. Default 40 trials.
std::vector<Table> two_choice_experiment(const LabOptions& options);

/// Standard versus Kirsch–Mitzenmacher Count-Min on a Zipf stream at equal
/// memory. Default 100 trials.
std::vector<Table> count_min_experiment(const LabOptions& options);

/// Largest counter of a counting Bloom filter against the overflow bound.
/// Default 5000 trials.
std::vector<Table> counting_experiment(const LabOptions& options);

}  // namespace flowsketch::app::lab
