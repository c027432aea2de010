// The errors opening a source can throw; reading never throws (damage is a ReadStatus).
#pragma once

#include <stdexcept>

namespace flowsketch::capture {

/// A file (or interface) that cannot be opened or read: message names it.
class CaptureError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A BPF expression that does not compile: a usage error.
class FilterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace flowsketch::capture
