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
#include "volseg/io/files.hpp"

namespace volseg::render {

namespace {

std::string errno_text() { return std::strerror(errno); }

// The 16-bit big-endian counted string of an Xauthority entry.
void put_counted(std::string& out, const std::string& value) {
  out.push_back(static_cast<char>((value.size() >> 8) & 0xff));
  out.push_back(static_cast<char>(value.size() & 0xff));
  out += value;
}

// An Xauthority file with one entry: any host (FamilyWild), the display
// number, the cookie (Xvfb reads the cookie, Xlib matches the number).
void write_authority(const std::string& path, const std::string& number, const std::string& cookie) {
  std::string entry;
  entry.push_back(static_cast<char>(0xff));  // FamilyWild
  entry.push_back(static_cast<char>(0xff));
  put_counted(entry, "");
  put_counted(entry, number);
  put_counted(entry, "MIT-MAGIC-COOKIE-1");
  put_counted(entry, cookie);
  io::write_file_atomically(path, entry);
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
// end, or Xvfb's own end (it did not start: the display was taken). Runs in
// the keeper, after fork: async-signal-safe calls only.
[[noreturn]] void keep(int life, const int* pidfds, pid_t* pids, int others, pid_t xvfb, const char* authority,
                       const char* log, const char* folder) {
  const int server = pidfd_open(xvfb);
  bool life_open = true, server_gone = false;
  int alive = others;
  pollfd fds[2 + 256];
  while (life_open || alive > 0) {
    if (::waitpid(xvfb, nullptr, WNOHANG) == xvfb) {
      server_gone = true;
      break;
    }
    int n = 0;
    bool must_tick = server < 0;  // no pidfd: look again in a moment
    if (server >= 0) fds[n++] = {server, POLLIN, 0};
    const int life_at = n;
    if (life_open) fds[n++] = {life, POLLIN, 0};
    for (int i = 0; i < others; ++i) {
      if (pids[i] == 0) continue;
      if (pidfds[i] >= 0) {
        fds[n++] = {pidfds[i], POLLIN, 0};
      } else {
        must_tick = true;
      }
    }
    if (::poll(fds, static_cast<nfds_t>(n), must_tick ? 200 : -1) < 0 && errno != EINTR) break;
    int k = life_at;
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
      const bool ended = pidfds[i] >= 0 ? fds[k++].revents != 0 : ::kill(pids[i], 0) != 0 && errno == ESRCH;
      if (ended) {
        pids[i] = 0;
      } else {
        ++alive;
      }
    }
  }
  if (!server_gone) {
    ::kill(xvfb, SIGTERM);
    for (int tick = 0; ::waitpid(xvfb, nullptr, WNOHANG) == 0; ++tick) {
      if (tick == 50) {  // 5 s
        ::kill(xvfb, SIGKILL);
        ::waitpid(xvfb, nullptr, 0);
        break;
      }
      const timespec pause{0, 100000000};
      ::nanosleep(&pause, nullptr);
    }
  }
  ::unlink(authority);
  ::unlink(log);
  ::rmdir(folder);
  ::_exit(0);
}

// A display number no X server of this machine holds now (no lock file, no
// socket), from `first` up. Numbers below 10 are left alone: Open MPI's
// hwloc probes :0 to :9 in every MPI_Init without a DISPLAY, and would knock
// on a private server there (Xlib's "Authorization required" on stderr).
int free_display_number(int first) {
  for (int n = first; n < first + 1000; ++n) {
    const std::string lock = "/tmp/.X" + std::to_string(n) + "-lock";
    const std::string socket = "/tmp/.X11-unix/X" + std::to_string(n);
    if (::access(lock.c_str(), F_OK) != 0 && ::access(socket.c_str(), F_OK) != 0) return n;
  }
  throw Error("no free X display number from " + std::to_string(first));
}

// Xvfb's line when another server took the display between the look and the start.
bool display_was_taken(const std::string& said) {
  return said.find("already active") != std::string::npos ||
         said.find("Cannot establish any listening") != std::string::npos;
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

namespace {

struct DisplayTaken : Error {
  using Error::Error;
};

// Descriptors of a started keeper: the life pipe's write end (held as long
// as this process lives) and the read end of the pipe Xvfb announces itself on.
struct Started {
  int life = -1;
  int shown = -1;
};

// Forks the keeper, which forks Xvfb on `display` (see the protocol at the
// top). Everything the children use is made before the fork.
Started fork_keeper(const std::string& xvfb, const std::string& display, const Folder& folder,
                    const std::vector<pid_t>& node_ranks) {
  int life[2] = {-1, -1}, shown[2] = {-1, -1};
  if (::pipe2(life, O_CLOEXEC) != 0) throw Error("cannot make a pipe for the private X server: " + errno_text());
  if (::pipe2(shown, O_CLOEXEC) != 0) {
    ::close(life[0]);
    ::close(life[1]);
    throw Error("cannot make a pipe for the private X server: " + errno_text());
  }
  const int log = ::open(folder.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log < 0) {
    const std::string why = errno_text();
    for (int fd : {life[0], life[1], shown[0], shown[1]}) ::close(fd);
    throw Error("cannot create " + folder.log + ": " + why);
  }
  std::vector<pid_t> pids = node_ranks;
  std::vector<int> pidfds;
  for (pid_t pid : pids) pidfds.push_back(pidfd_open(pid));  // -1: the keeper polls kill(pid, 0)
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const std::string displayfd = std::to_string(shown[1]);
  std::vector<std::string> args = {xvfb,      display, "-displayfd",   displayfd,   "-auth", folder.authority,
                                   "-screen", "0",     "1280x1024x24", "-nolisten", "tcp",   "-noreset"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<int> kept = {null, life[0], shown[1], log};
  for (int fd : pidfds) kept.push_back(fd);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::remove(kept.begin(), kept.end(), -1), kept.end());
  sigset_t none;
  sigemptyset(&none);

  const pid_t middle = ::fork();
  if (middle == 0) {
    // The middle child detaches the keeper (a new session, parent init) so
    // that this process never waits for it, and it for no terminal.
    ::setsid();
    const pid_t keeper = ::fork();
    if (keeper != 0) ::_exit(keeper < 0 ? 1 : 0);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &ignore, nullptr);
    // Standard streams to /dev/null, everything else closed (life[1] too:
    // only the starting process holds it, so its end is EOF here).
    for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
    close_all_but(kept.data(), static_cast<int>(kept.size()));
    const pid_t keeper_pid = ::getpid();
    const pid_t server = ::fork();
    if (server == 0) {
      struct sigaction standard {};
      standard.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2})
        ::sigaction(sig, &standard, nullptr);
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
         folder.log.c_str(), folder.path.c_str());
  }
  const int fork_errno = errno;
  int status = 1;
  if (middle > 0)
    while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
  for (int fd : {log, null, life[0], shown[1]})
    if (fd >= 0) ::close(fd);
  for (int fd : pidfds)
    if (fd >= 0) ::close(fd);
  if (middle <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::close(life[1]);
    ::close(shown[0]);
    throw Error("cannot fork the private X server's keeper: " + std::string(std::strerror(fork_errno)));
  }
  return {life[1], shown[0]};
}

// Waits (30 s at most) for Xvfb to write its display number, which it does
// once it accepts clients; EOF when it died first.
void wait_until_accepting(int shown, const std::string& xvfb, const Folder& folder) {
  std::string number;
  const auto deadline = std::time(nullptr) + 30;
  for (;;) {
    const int left = static_cast<int>(deadline - std::time(nullptr));
    if (left <= 0) throw Error("the private Xvfb did not start within 30 s (" + last_lines(folder.log) + ")");
    pollfd fd{shown, POLLIN, 0};
    if (::poll(&fd, 1, left * 1000) <= 0) continue;
    char buffer[32];
    const ssize_t got = ::read(shown, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    number.append(buffer, static_cast<size_t>(got));
    if (number.find('\n') != std::string::npos) return;
  }
  const std::string said = last_lines(folder.log);
  if (display_was_taken(said)) throw DisplayTaken(said);
  throw Error("the private Xvfb (" + xvfb + ") did not start" + (said.empty() ? "" : ": " + said));
}

// One try on display :display_number (DisplayTaken when another server got
// there first). The keeper removes the folder when it ends; before it runs,
// a failure removes it here.
PrivateXServer start_on(const std::string& xvfb, int display_number, const std::vector<pid_t>& node_ranks) {
  const Folder folder = make_folder();
  std::string display = ":";  // appended, not "+": GCC 12 warns wrongly on that (PR 105651)
  display += std::to_string(display_number);
  Started started;
  try {
    write_authority(folder.authority, std::to_string(display_number), random_cookie());
    started = fork_keeper(xvfb, display, folder, node_ranks);
  } catch (...) {
    folder.remove();
    throw;
  }
  try {
    wait_until_accepting(started.shown, xvfb, folder);
  } catch (...) {
    ::close(started.shown);
    ::close(started.life);  // the keeper stops Xvfb and removes the folder
    throw;
  }
  ::close(started.shown);
  // started.life stays open (close-on-exec) as long as this process lives.
  return {display, folder.authority};
}

}  // namespace

PrivateXServer start_private_x_server(const std::string& xvfb, const std::vector<pid_t>& node_ranks) {
  if (node_ranks.size() > 256) throw Error("a private X server serves at most 257 ranks of a node");
  // Spread over 100..999 by process, so that jobs starting together rarely
  // try the same number; a number taken meanwhile is tried again one up.
  int first = 100 + static_cast<int>(::getpid() % 900);
  for (int attempt = 0;; ++attempt) {
    const int number = free_display_number(first);
    try {
      return start_on(xvfb, number, node_ranks);
    } catch (const DisplayTaken& e) {
      if (attempt == 9) throw Error(std::string("no display number was free for the private Xvfb: ") + e.what());
      first = number + 1;
    }
  }
}

}  // namespace volseg::render
