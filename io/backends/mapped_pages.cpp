// SPDX-License-Identifier: MIT
#include "mapped_pages.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "volseg/io/error.hpp"

namespace volseg::io::mapped {
namespace {

// The watched windows, read by the signal handler: only lock-free atomics.
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<std::uintptr_t> fault{0};  // the first address that raised SIGBUS, 0 if none
};
constexpr int kSlots = 256;
Slot slots[kSlots];
std::uintptr_t page_bytes = 4096;
struct sigaction previous {};

void on_sigbus(int, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& slot : slots) {
    if (!slot.used.load() || address < slot.begin.load() || address >= slot.end.load()) continue;
    std::uintptr_t none = 0;
    slot.fault.compare_exchange_strong(none, address);
    // Zeros in place of the page; the access that faulted is retried on them.
    void* page = reinterpret_cast<void*>(address & ~(page_bytes - 1));
    if (::mmap(page, page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
      return;
    break;
  }
  // Not a watched page: back to the disposition from before, which the
  // retried access then meets.
  ::sigaction(SIGBUS, &previous, nullptr);
}

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    page_bytes = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &previous);  // if this fails, SIGBUS stays fatal, as before
  });
}

}  // namespace

Watch::Watch(void* base, std::size_t length, std::uint64_t file_offset, std::string path, bool writable)
    : begin_(reinterpret_cast<std::uintptr_t>(base)),
      file_offset_(file_offset),
      path_(std::move(path)),
      writable_(writable) {
  install();
  for (int i = 0; i < kSlots; ++i) {
    bool free = false;
    if (!slots[i].used.load() && slots[i].used.compare_exchange_strong(free, true)) {
      slots[i].fault.store(0);
      slots[i].end.store(0);
      slots[i].begin.store(begin_);
      slots[i].end.store(begin_ + length);
      slot_ = i;
      return;
    }
  }
}

Watch::~Watch() {
  if (slot_ < 0) return;
  slots[slot_].end.store(0);
  slots[slot_].begin.store(0);
  slots[slot_].used.store(false);
}

void Watch::check(int fd) const {
  if (slot_ < 0) return;
  const std::uintptr_t fault = slots[slot_].fault.load();
  if (fault == 0) return;
  const std::uint64_t byte = file_offset_ + (fault - begin_);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) <= byte)
    throw RankError(std::string(writable_ ? "write " : "read ") + path_ + ": the file shrank to " +
                    std::to_string(st.st_size) + " bytes while mapped (SIGBUS on the mapped page at byte " +
                    std::to_string(byte) + ")");
  throw RankError(std::string(writable_ ? "write " : "read ") + path_ + ": " + std::strerror(EIO) +
                  " (SIGBUS on the mapped page at byte " + std::to_string(byte) + ")");
}

void populate_error(int error, int fd, std::uint64_t file_offset, std::uint64_t length, const std::string& path,
                    bool writable) {
  const char* call = writable ? "write " : "read ";
  const char* how = writable ? " (populating the mapped window for writing)" : " (populating the mapped window)";
  if (error == EFAULT) {
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) < file_offset + length)
      throw RankError(call + path + ": the file shrank to " + std::to_string(st.st_size) + " bytes while mapped" + how);
    error = EIO;  // a page that cannot be read
  }
  throw RankError(call + path + ": " + std::strerror(error) + how);
}

void plant_sigbus(void* page, bool writable) {
  // Past the end of an empty file: every access raises SIGBUS.
  const int fd = ::memfd_create("volseg-fault", MFD_CLOEXEC);
  if (fd < 0) throw_errno("memfd_create (fault injection)", "");
  void* planted = ::mmap(page, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)),
                         writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  const int saved = errno;
  ::close(fd);
  if (planted == MAP_FAILED) throw_errno("mmap (fault injection)", "", saved);
}

}  // namespace volseg::io::mapped
