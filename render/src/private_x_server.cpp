// SPDX-License-Identifier: MIT
// The private Xvfb of a node (private_x_server.hpp). Its lifetime protocol:
//
//   this process        keeper (detached)               Xvfb
//   folder, cookie  ->  ignores INT/TERM/HUP, new       -displayfd W -auth F,
//   pipes, pidfds       session, forks Xvfb       ->    dies with the keeper
//                       (PDEATHSIG)
//   reads ":N" from the display pipe, which Xvfb writes when it accepts clients
//   keeps the life pipe's write end until it ends
//                       waits for EOF on the life pipe AND the end of every
//                       other rank of the node (pidfds, else kill(pid, 0)),
//                       then SIGTERM (SIGKILL after 5 s) to Xvfb, removes the
//                       folder, exits
//
// Between fork and exec (or _exit) only async-signal-safe calls are made:
// everything they need (argv, paths, descriptors) is made before the fork.
#include "private_x_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "volseg/io/error.hpp"

namespace volseg::render {

namespace {

std::string errno_text() { return std::strerror(errno); }

// The 16-bit big-endian counted string of an Xauthority entry.
void put_counted(std::string& out, const std::string& value) {
  out.push_back(static_cast<char>((value.size() >> 8) & 0xff));
  out.push_back(static_cast<char>(value.size() & 0xff));
  out += value;
}

// An Xauthority file with one entry for any host (FamilyWild) and the given
// display number ("" while it is not known: Xvfb reads only the cookie).
void write_authority(const std::string& path, const std::string& number, const std::string& cookie) {
  std::string entry;
  entry.push_back(static_cast<char>(0xff));  // FamilyWild
  entry.push_back(static_cast<char>(0xff));
  put_counted(entry, "");
  put_counted(entry, number);
  put_counted(entry, "MIT-MAGIC-COOKIE-1");
  put_counted(entry, cookie);
  const std::string temporary = path + ".new";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot create the X authority file " + temporary + ": " + errno_text());
  const ssize_t written = ::write(fd, entry.data(), entry.size());
  const int write_errno = errno;
  if (::close(fd) != 0 || written != static_cast<ssize_t>(entry.size())) {
    errno = written < 0 ? write_errno : errno;
    ::unlink(temporary.c_str());
    throw Error("cannot write the X authority file " + temporary + ": " + errno_text());
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    throw Error("cannot rename " + temporary + " to " + path + ": " + errno_text());
}

std::string random_cookie() {
  std::string cookie(16, '\0');
  if (::getrandom(cookie.data(), cookie.size(), 0) != static_cast<ssize_t>(cookie.size()))
    throw Error("cannot draw a random X cookie: " + errno_text());
  return cookie;
}

// What Xvfb said last (its log), for an error message.
std::string last_lines(const std::string& path) {
  std::ifstream in(path);
  std::string line, said;
  while (std::getline(in, line))
    if (!line.empty() && line.find("Could not resolve keysym") == std::string::npos) said = line;
  return said;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Closes every descriptor but the sorted `kept` ones (after fork: the
// keeper must not hold the rank's sockets, files or output pipes open).
void close_all_but(const int* kept, int count) {
  int next = 0;
  for (int i = 0; i <= count; ++i) {
    const int last = i < count ? kept[i] - 1 : 1 << 20;
    if (last >= next && ::syscall(SYS_close_range, next, last, 0) != 0)
      for (int fd = next; fd <= last && fd < 65536; ++fd) ::close(fd);
    if (i < count) next = kept[i] + 1;
  }
}

struct Folder {
  std::string path, authority, log;
  void remove() const {
    ::unlink(authority.c_str());
    ::unlink((authority + ".new").c_str());
    ::unlink(log.c_str());
    ::rmdir(path.c_str());
  }
};

Folder make_folder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/volseg-x-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw Error("cannot make a private folder under " + base + ": " + errno_text());
  return {pattern, pattern + "/Xauthority", pattern + "/Xvfb.log"};
}

// What the keeper waits for: the life pipe's EOF and every other node rank's
// end. Runs in the keeper, after fork: async-signal-safe calls only.
[[noreturn]] void keep(int life, const int* pidfds, pid_t* pids, int others, pid_t xvfb, const char* authority,
                       const char* authority_new, const char* log, const char* folder) {
  bool life_open = true;
  int alive = others;
  pollfd fds[1 + 256];
  while (life_open || alive > 0) {
    int n = 0;
    bool must_tick = false;
    if (life_open) fds[n++] = {life, POLLIN, 0};
    for (int i = 0; i < others; ++i) {
      if (pids[i] == 0) continue;
      if (pidfds[i] >= 0 && n < 257) {
        fds[n++] = {pidfds[i], POLLIN, 0};
      } else {
        must_tick = true;  // no pidfd: look again in a moment
      }
    }
    const int ready = ::poll(fds, static_cast<nfds_t>(n), must_tick ? 200 : -1);
    if (ready < 0 && errno != EINTR) break;
    int k = 0;
    if (life_open) {
      if (fds[k].revents) {
        char byte;
        const ssize_t got = ::read(life, &byte, 1);
        if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) life_open = false;
      }
      ++k;
    }
    alive = 0;
    for (int i = 0; i < others; ++i) {
      if (pids[i] == 0) continue;
      bool ended = false;
      if (pidfds[i] >= 0 && k < n) {
        ended = fds[k++].revents != 0;
      } else {
        ended = ::kill(pids[i], 0) != 0 && errno == ESRCH;
      }
      if (ended) {
        pids[i] = 0;
      } else {
        ++alive;
      }
    }
  }
  ::kill(xvfb, SIGTERM);
  for (int tick = 0; tick < 50; ++tick) {
    if (::waitpid(xvfb, nullptr, WNOHANG) != 0) break;
    const timespec pause{0, 100000000};
    ::nanosleep(&pause, nullptr);
    if (tick == 49) {
      ::kill(xvfb, SIGKILL);
      ::waitpid(xvfb, nullptr, 0);
    }
  }
  ::unlink(authority);
  ::unlink(authority_new);
  ::unlink(log);
  ::rmdir(folder);
  ::_exit(0);
}

}  // namespace

std::string find_xvfb() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/Xvfb";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  if (::access("/usr/bin/Xvfb", X_OK) == 0) return "/usr/bin/Xvfb";
  return "";
}

PrivateXServer start_private_x_server(const std::string& xvfb, const std::vector<pid_t>& node_ranks) {
  if (node_ranks.size() > 256) throw Error("a private X server serves at most 257 ranks of a node");
  Folder folder = make_folder();
  int life[2] = {-1, -1}, shown[2] = {-1, -1};
  std::vector<int> pidfds;
  bool keeper_started = false;
  auto close_all = [&] {
    for (int fd : {life[0], life[1], shown[0], shown[1]})
      if (fd >= 0) ::close(fd);
    for (int fd : pidfds)
      if (fd >= 0) ::close(fd);
  };
  try {
    const std::string cookie = random_cookie();
    write_authority(folder.authority, "", cookie);
    if (::pipe2(life, O_CLOEXEC) != 0 || ::pipe2(shown, O_CLOEXEC) != 0)
      throw Error("cannot make a pipe for the private X server: " + errno_text());
    for (pid_t pid : node_ranks) pidfds.push_back(pidfd_open(pid));  // -1: the keeper polls kill(pid, 0)
    const int log = ::open(folder.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0) throw Error("cannot create " + folder.log + ": " + errno_text());
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    // Everything the children need, made now.
    const std::string displayfd = std::to_string(shown[1]);
    std::vector<std::string> args = {xvfb,    "-displayfd", displayfd, "-auth",  folder.authority,
                                      "-screen", "0",          "1280x1024x24", "-nolisten", "tcp", "-noreset"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<pid_t> pids = node_ranks;
    const std::string authority_new = folder.authority + ".new";
    sigset_t none;
    sigemptyset(&none);
    std::vector<int> kept = {null, life[0], shown[1], log};
    for (int fd : pidfds)
      if (fd >= 0) kept.push_back(fd);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::remove(kept.begin(), kept.end(), -1), kept.end());

    const pid_t middle = ::fork();
    if (middle < 0) {
      ::close(log);
      if (null >= 0) ::close(null);
      throw Error("cannot fork the private X server's keeper: " + errno_text());
    }
    keeper_started = true;
    if (middle == 0) {
      // The middle child detaches the keeper (a new session, parent init)
      // so that this process never waits for it, and it for no terminal.
      ::setsid();
      const pid_t keeper = ::fork();
      if (keeper != 0) ::_exit(keeper < 0 ? 1 : 0);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(s, &ignore, nullptr);
      // Standard streams to /dev/null, everything else closed (life[1]
      // too: only the starting process holds it, so its end is EOF here).
      for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
      close_all_but(kept.data(), static_cast<int>(kept.size()));
      const pid_t keeper_pid = ::getpid();
      const pid_t server = ::fork();
      if (server == 0) {
        struct sigaction standard {};
        standard.sa_handler = SIG_DFL;
        for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(s, &standard, nullptr);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != keeper_pid) ::_exit(1);
        ::dup2(log, 1);
        ::dup2(log, 2);
        ::fcntl(shown[1], F_SETFD, 0);  // Xvfb writes its display number here
        ::execv(argv[0], argv.data());
        ::_exit(127);
      }
      ::close(shown[1]);
      ::close(log);
      if (server < 0) ::_exit(1);
      keep(life[0], pidfds.data(), pids.data(), static_cast<int>(pids.size()), server, folder.authority.c_str(),
           authority_new.c_str(), folder.log.c_str(), folder.path.c_str());
    }
    ::close(log);
    if (null >= 0) ::close(null);
    int status = 0;
    while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(shown[1]);
    shown[1] = -1;
    ::close(life[0]);
    life[0] = -1;
    for (int& fd : pidfds)
      if (fd >= 0) ::close(fd);
    pidfds.clear();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error("cannot fork the private X server's keeper");

    // Xvfb writes its display number once it accepts clients; EOF when it
    // died first.
    std::string number;
    const auto deadline = std::time(nullptr) + 30;
    for (;;) {
      pollfd fd{shown[0], POLLIN, 0};
      const int left = static_cast<int>(deadline - std::time(nullptr));
      if (left <= 0) throw Error("the private Xvfb did not start within 30 s (" + last_lines(folder.log) + ")");
      const int ready = ::poll(&fd, 1, left * 1000);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      char buffer[32];
      const ssize_t got = ::read(shown[0], buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      number.append(buffer, static_cast<size_t>(got));
      if (number.find('\n') != std::string::npos) break;
    }
    while (!number.empty() && (number.back() == '\n' || number.back() == ' ')) number.pop_back();
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) {
      const std::string said = last_lines(folder.log);
      throw Error("the private Xvfb (" + xvfb + ") did not start" + (said.empty() ? "" : ": " + said));
    }
    ::close(shown[0]);
    shown[0] = -1;
    write_authority(folder.authority, number, cookie);
    // life[1] stays open (close-on-exec) as long as this process lives.
    return {":" + number, folder.authority};
  } catch (...) {
    // The keeper sees the life pipe close; it stops Xvfb once the node's
    // other ranks (which throw the same error) have ended, and removes the
    // folder then. Without a keeper, remove it now.
    close_all();
    if (!keeper_started) folder.remove();
    throw;
  }
}

}  // namespace volseg::render
