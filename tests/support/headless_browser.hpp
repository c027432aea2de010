// Pages rendered by a real headless chromium, as the HTML report tests load
// them: the DOM after the scripts ran and every line the page logged.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {

/// The chromium on PATH, or "" (the tests skip then).
inline std::string find_chromium() {
    for (const char* name : {"chromium", "chromium-browser"}) {
        if (std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0) return name;
    }
    return {};
}

struct Rendered {
    std::string dom;
    std::vector<std::string> console;  // lines the page logged, errors included
};

inline Rendered render(const std::string& browser, const std::string& html_path) {
    const std::string base = tmp_path("chromium-" + std::to_string(::getpid()));
    const std::string profile = base + "-profile";
    const std::string command = "timeout 180 " + browser +
                                " --headless --no-sandbox --disable-gpu --user-data-dir=" + profile +
                                " --enable-logging=stderr --v=0 --dump-dom file://" + html_path + " >" + base +
                                ".dom 2>" + base + ".err";
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
    Rendered rendered;
    rendered.dom = read_file(base + ".dom");
    for (const std::string& line : lines_of(read_file(base + ".err"))) {
        if (line.find(":CONSOLE") != std::string::npos) rendered.console.push_back(line);
    }
    std::remove((base + ".dom").c_str());
    std::remove((base + ".err").c_str());
    std::filesystem::remove_all(profile);
    return rendered;
}

/// The rendered <svg id="ID">...</svg>, or "" if absent.
inline std::string svg_of(const std::string& dom, const std::string& id) {
    const std::size_t begin = dom.find("<svg id=\"" + id + "\"");
    if (begin == std::string::npos) return {};
    const std::size_t end = dom.find("</svg>", begin);
    return end == std::string::npos ? std::string() : dom.substr(begin, end - begin);
}

}  // namespace flowsketch::testing
