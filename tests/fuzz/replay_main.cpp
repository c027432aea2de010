// Runs inputs through LLVMFuzzerTestOneInput without libFuzzer, so every fuzz target also
// builds as an ordinary program: ctest replays the corpus under ASan/UBSan, and a crasher
// can be debugged in gdb. Arguments are files or directories (every regular file inside,
// recursively, in sorted order).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

bool run_file(const fs::path& path) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return false;
    }
    // An exact-size allocation, so ASan reports a read even one byte past the input.
    const auto length = static_cast<std::size_t>(size);
    auto buffer = std::make_unique<std::uint8_t[]>(length);
    if (!in.read(reinterpret_cast<char*>(buffer.get()), static_cast<std::streamsize>(length))) {
        std::fprintf(stderr, "replay: short read on %s\n", path.c_str());
        return false;
    }
    LLVMFuzzerTestOneInput(buffer.get(), length);
    return true;
}

// Collects the inputs an argument names; false if it names nothing readable.
bool collect(const fs::path& argument, std::vector<fs::path>& inputs) {
    std::error_code ec;
    if (fs::is_regular_file(argument, ec)) {
        inputs.push_back(argument);
        return true;
    }
    if (!fs::is_directory(argument, ec)) {
        std::fprintf(stderr, "replay: %s: no such file or directory\n", argument.c_str());
        return false;
    }
    std::vector<fs::path> found;
    for (fs::recursive_directory_iterator it(argument, ec), end; !ec && it != end;
         it.increment(ec)) {
        if (it->is_regular_file(ec)) found.push_back(it->path());
    }
    if (ec) {
        std::fprintf(stderr, "replay: cannot list %s: %s\n", argument.c_str(),
                     ec.message().c_str());
        return false;
    }
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argc > 0 ? argv[0] : "replay");
        return 2;
    }
    std::vector<fs::path> inputs;
    bool ok = true;
    for (int i = 1; i < argc; ++i) ok = collect(argv[i], inputs) && ok;
    for (const fs::path& input : inputs) ok = run_file(input) && ok;
    std::fprintf(stderr, "replay: ran %zu inputs\n", inputs.size());
    // A replay over nothing proves nothing: an empty corpus is an error too.
    return ok && !inputs.empty() ? 0 : 1;
}
