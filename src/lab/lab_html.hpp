// `flowsketch lab --html FILE`: the experiments' tables as one self-contained
// page, with the papers' figures drawn from them (docs/lab.md).
#pragma once

#include <string>
#include <vector>

#include "src/lab/lab.hpp"

namespace flowsketch::app::lab {

/// The page: a figure for each experiment that has one among `tables`
/// (Kirsch–Mitzenmacher Fig. 2 per scheme, Lumetta–Mitzenmacher Table 3
/// against the paper, Count-Min's error against its bound), then every
/// table. Inline CSS and SVG; a Content-Security-Policy forbids requests.
std::string lab_page(const std::vector<Table>& tables, const std::string& command);

}  // namespace flowsketch::app::lab
