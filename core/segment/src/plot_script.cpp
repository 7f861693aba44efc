// SPDX-License-Identifier: MIT
#include "volseg/segment/plot_script.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "volseg/io/error.hpp"

extern char** environ;

namespace volseg::segment {

std::string script_path(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(self.parent_path() / ".." / "share" / "volseg" / name);
  candidates.push_back(fs::path(VOLSEG_BUILD_DATADIR) / name);
  for (const auto& candidate : candidates)
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  throw Error("script " + name + " is missing (looked in " + candidates.front().lexically_normal().string() + " and " +
              candidates.back().string() + ")");
}

void run_script(const std::string& name, const std::vector<std::string>& arguments) {
  const std::string script = script_path(name);
  const std::string python = "/usr/bin/python3";
  std::vector<std::string> args{python, script};
  args.insert(args.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = ::posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ); rc != 0)
    throw_errno("run", python, rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw_errno("wait for", script);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("script " + script + " failed (" +
                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                   : "signal " + std::to_string(WTERMSIG(status))) +
                "); its message is above");
}

}  // namespace volseg::segment
