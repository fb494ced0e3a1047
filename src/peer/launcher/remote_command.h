// How murmur-run starts a peer on another host: an ssh-like command built
// from a template with the placeholders {host} and {command}.
//
// The template is split into words like a shell would (whitespace, '...',
// "..." and backslash), without running a shell; each placeholder is then
// replaced inside its word, so "{command}" stays one argument however many
// spaces it holds. {command} is a shell command line for the remote login
// shell: "cd <cwd> && env NAME=value... PROGRAM ARGS", every word quoted.
//
// Pure functions; thread-safe.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace murmur::peer::launcher {

inline constexpr const char* kDefaultSshTemplate = "ssh -o BatchMode=yes {host} {command}";

class TemplateError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// `s` as one POSIX shell word: unchanged when it holds only characters no
// shell treats specially, else in single quotes ('\'' for a quote).
std::string shell_quote(std::string_view s);

// "cd <cwd> && env A=1 B=2 <argv...>", each part shell-quoted.
std::string remote_command_line(const std::string& cwd, const std::vector<std::string>& env,
                                const std::vector<std::string>& argv);

// Splits `tmpl` into words and substitutes the placeholders. Throws
// TemplateError for an unbalanced quote, a trailing backslash or a template
// without {command}.
std::vector<std::string> expand_ssh_template(const std::string& tmpl, const std::string& host,
                                             const std::string& command);

}  // namespace murmur::peer::launcher
