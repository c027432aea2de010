#include "src/cli/generate.hpp"

#include <fmt/format.h>

#include <string_view>
#include <vector>

namespace flowsketch::cli {

namespace {

// Text made safe for roff: backslashes doubled, hyphens of options literal,
// and a line that starts with a dot or quote escaped.
std::string roff(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";
        } else {
            out += c;
        }
    }
    if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
    return out;
}

std::vector<const CLI::Option*> documented_options(const CLI::App& app) {
    return app.get_options([](const CLI::Option* option) { return !option->get_group().empty(); });
}

std::vector<const CLI::App*> subcommands(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

// "-r, --read FILE": the names as a reader types them, then the value's kind.
std::string option_label(const CLI::Option& option) {
    std::string label;
    if (option.get_positional()) return fmt::format("\\fI{}\\fR", roff(option.get_name(true)));
    for (const std::string& name : option.get_snames()) {
        label += fmt::format("{}\\fB\\-{}\\fR", label.empty() ? "" : ", ", roff(name));
    }
    for (const std::string& name : option.get_lnames()) {
        label += fmt::format("{}\\fB\\-\\-{}\\fR", label.empty() ? "" : ", ", roff(name));
    }
    if (option.get_type_size() != 0 && !option.get_type_name().empty()) {
        label += " \\fI" + roff(option.get_type_name()) + "\\fR";
    }
    return label;
}

void append_options(std::string& page, const CLI::App& app) {
    for (const CLI::Option* option : documented_options(app)) {
        page += ".TP\n" + option_label(*option) + "\n" + roff(option->get_description());
        if (!option->get_default_str().empty()) page += " (default: " + roff(option->get_default_str()) + ")";
        if (option->get_required()) page += " (required)";
        page += "\n";
    }
}

}  // namespace

std::string man_page(const CLI::App& app, const std::string& version) {
    std::string page;
    page += fmt::format(".TH FLOWSKETCH 1 \"\" \"{}\" \"User Commands\"\n", roff(version));
    page += ".SH NAME\nflowsketch \\- who is eating the link, in fixed memory, with error bounds\n";
    page += ".SH SYNOPSIS\n.B flowsketch\n[\\fIOPTIONS\\fR] \\fB\\-r\\fR \\fIFILE\\fR [\\fB\\-r\\fR \\fIFILE\\fR]... [\\fIexpression\\fR]\n.br\n";
    page += ".B flowsketch\n[\\fIOPTIONS\\fR] \\fB\\-i\\fR \\fIIFACE\\fR [\\fB\\-i\\fR \\fIIFACE\\fR]... [\\fIexpression\\fR]\n";
    for (const CLI::App* sub : subcommands(app)) {
        page += fmt::format(".br\n.B flowsketch {}\n[\\fIOPTIONS\\fR]\n", roff(sub->get_name()));
    }
    page += ".SH DESCRIPTION\n" + roff(app.get_description()) + "\n";
    page += ".PP\nEvery report gives each number with its bound: a heavy hitter's true count lies in "
            "[lower bound, estimate] with probability at least 1 \\- \\(*d; new flows are never "
            "overcounted and the most they miss is stated. Memory is fixed by the options, never by "
            "the traffic.\n";
    page += ".SH OPTIONS\n";
    append_options(page, app);
    for (const CLI::App* sub : subcommands(app)) {
        page += fmt::format(".SH \"COMMAND: {}\"\n{}\n", roff(sub->get_name()), roff(sub->get_description()));
        page += fmt::format(".PP\n.B flowsketch {}\n[\\fIOPTIONS\\fR]\n.PP\n", roff(sub->get_name()));
        append_options(page, *sub);
    }
    page += ".SH EXIT STATUS\n"
            ".TP\n0\nthe run ended normally (a capture damaged after its header is warned about, "
            "counted up to the damage, and still exits 0)\n"
            ".TP\n1\na file, interface or output could not be used\n"
            ".TP\n2\na bad option, filter or key spec; \\-\\-verify passing \\-\\-verify\\-max\\-flows\n"
            ".TP\n3\n\\-\\-verify=strict: bounds broke more often than their probabilities allow\n";
    page += ".SH SIGNALS\nSIGINT and SIGTERM end the run with a final report; SIGHUP reopens "
            "the \\fB\\-o\\fR file (for log rotation).\n";
    page += ".SH EXAMPLES\n"
            ".TP\nflowsketch \\-r trace.pcap\nheavy hitters and flow counts of a capture, every 10 s of packet time\n"
            ".TP\nflowsketch \\-r trace.pcap \\-\\-key dst \\-\\-key dst:distinct=src \\-\\-format json\n"
            "the busiest destinations and the ones with most sources, as JSON Lines\n"
            ".TP\nflowsketch \\-i eth0 \\-\\-listen :9100 tcp port 443\nlive HTTPS traffic, served to Prometheus\n";
    page += ".SH SEE ALSO\n.BR tcpdump (1),\n.BR pcap-filter (7).\n"
            "The documentation installed with flowsketch (share/doc/flowsketch) explains every "
            "report field and its bound.\n";
    return page;
}

namespace {

// "-r|--read": the names of an option as a bash case pattern.
std::string case_pattern(const CLI::Option& option) {
    std::string pattern;
    for (const std::string& name : option.get_snames()) pattern += fmt::format("{}-{}", pattern.empty() ? "" : "|", name);
    for (const std::string& name : option.get_lnames()) pattern += fmt::format("{}--{}", pattern.empty() ? "" : "|", name);
    return pattern;
}

// The completion of one command: the value of an option that takes one (its
// choices, or file names for a FILE or plain TEXT), else the option names.
std::string complete_command(const CLI::App& command, const std::string& otherwise) {
    std::string values;
    std::string names;
    for (const CLI::Option* option : documented_options(command)) {
        if (option->get_positional()) continue;
        for (const std::string& name : option->get_snames()) names += " -" + name;
        for (const std::string& name : option->get_lnames()) names += " --" + name;
        if (option->get_type_size() == 0) continue;
        const std::string type = option->get_type_name();
        const std::size_t open = type.find(":{");
        const std::size_t close = type.find('}', open == std::string::npos ? 0 : open);
        if (open != std::string::npos && close != std::string::npos) {
            std::string choices = type.substr(open + 2, close - open - 2);
            for (char& c : choices) {
                if (c == ',') c = ' ';
            }
            values += fmt::format("            {}) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n",
                                  case_pattern(*option), choices);
        } else if (type == "FILE" || type == "TEXT") {
            values += fmt::format("            {}) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n",
                                  case_pattern(*option));
        } else if (type == "IFACE") {
            values += fmt::format("            {}) COMPREPLY=($(compgen -W \"$(ls /sys/class/net 2>/dev/null) any\" -- \"$cur\")); return ;;\n",
                                  case_pattern(*option));
        } else {
            values += fmt::format("            {}) return ;;\n", case_pattern(*option));
        }
    }
    std::string text;
    if (!values.empty()) text += "        case \"$prev\" in\n" + values + "        esac\n";
    text += fmt::format("        if [[ \"$cur\" == -* || -z \"{}\" ]]; then\n"
                        "            COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n"
                        "        else\n"
                        "            COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n"
                        "        fi\n",
                        otherwise, names.empty() ? "" : names.substr(1), otherwise);
    return text;
}

}  // namespace

std::string bash_completion(const CLI::App& app) {
    std::string names;
    std::string pattern;
    for (const CLI::App* sub : subcommands(app)) {
        names += (names.empty() ? "" : " ") + sub->get_name();
        pattern += (pattern.empty() ? "" : "|") + sub->get_name();
    }
    std::string script =
        "# bash completion for flowsketch, generated by flowsketch --generate complete-bash\n"
        "_flowsketch() {\n"
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" command=\"\" i\n";
    if (!pattern.empty()) {
        script += fmt::format("    for ((i = 1; i < COMP_CWORD; i++)); do\n"
                              "        case \"${{COMP_WORDS[i]}}\" in {}) command=\"${{COMP_WORDS[i]}}\"; break ;; esac\n"
                              "    done\n",
                              pattern);
    }
    script += "    case \"$command\" in\n";
    for (const CLI::App* sub : subcommands(app)) {
        script += fmt::format("    {})\n{}        ;;\n", sub->get_name(), complete_command(*sub, ""));
    }
    script += "    *)\n" + complete_command(app, names) + "        ;;\n    esac\n}\n";
    script += "complete -o filenames -F _flowsketch flowsketch\n";
    return script;
}

}  // namespace flowsketch::cli
