#pragma once

#include <string>

namespace flowsketch::app {

/// Drops root privileges to `user` (its primary group and supplementary
/// groups), as tcpdump -Z does, after interfaces and outputs are open.
/// Throws std::runtime_error naming the user on any failure; never returns
/// with privileges half dropped.
void drop_privileges(const std::string& user);

}  // namespace flowsketch::app
