#include "peer/launcher/remote_command.h"

namespace murmur::peer::launcher {

namespace {

bool is_plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == ':' || c == ',' || c == '+' || c == '@' || c == '%' || c == '=';
}

std::vector<std::string> split_words(const std::string& tmpl) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i == tmpl.size()) throw TemplateError("--ssh template '" + tmpl + "' ends with a backslash");
      word.push_back(tmpl[i]);
    } else if (c == '\'' || c == '"') {
      auto close = tmpl.find(c, i + 1);
      if (close == std::string::npos) {
        throw TemplateError("--ssh template '" + tmpl + "' has an unbalanced " + (c == '\'' ? "'" : "\""));
      }
      word += tmpl.substr(i + 1, close - i - 1);
      i = close;
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

void replace_all(std::string& s, const std::string& what, const std::string& with) {
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) {
    s.replace(at, what.size(), with);
  }
}

}  // namespace

std::string shell_quote(std::string_view s) {
  bool plain = !s.empty();
  for (char c : s) plain = plain && is_plain(c);
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string remote_command_line(const std::string& cwd, const std::vector<std::string>& env,
                                const std::vector<std::string>& argv) {
  std::string line = "cd " + shell_quote(cwd) + " && env";
  for (const auto& e : env) line += " " + shell_quote(e);
  for (const auto& a : argv) line += " " + shell_quote(a);
  return line;
}

std::vector<std::string> expand_ssh_template(const std::string& tmpl, const std::string& host,
                                             const std::string& command) {
  if (tmpl.find("{command}") == std::string::npos) {
    throw TemplateError("--ssh template '" + tmpl + "' has no {command} placeholder");
  }
  auto words = split_words(tmpl);
  // Substitute {command} last so that a command holding "{host}" stays as is.
  for (auto& w : words) {
    auto at = w.find("{command}");
    std::string head = w.substr(0, at == std::string::npos ? w.size() : at);
    std::string tail = at == std::string::npos ? "" : w.substr(at + 9);
    replace_all(head, "{host}", host);
    replace_all(tail, "{host}", host);
    w = at == std::string::npos ? head : head + command + tail;
  }
  return words;
}

}  // namespace murmur::peer::launcher
