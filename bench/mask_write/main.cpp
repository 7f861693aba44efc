// SPDX-License-Identifier: MIT
// volseg-mask-write: the ways to put a mask (1 byte a voxel, much of it
// zero) into a new file, timed against each other in the same run.
//
// The mask comes from a real one (--from FILE, read into memory first) or
// from a pattern with --zero-share of its 4 KiB pages zero. It is written in
// --chunk pieces, as segment writes one brick after another, to a new file
// in --dir, by each method in turn, --repeat rounds in a new order each, the
// file deleted between runs. The time is from create to a checked close
// (and fdatasync with --sync). Prints one CSV line per method: median,
// min, max seconds and GB/s.
//
//   pwrite-fallocate   fallocate the size, then pwrite (volseg up to now)
//   pwrite-truncate    ftruncate the size (sparse), then pwrite everything
//   pwrite-sparse      ftruncate, then pwrite only the 4 KiB pages that are
//                      not all zero (holes read back as zeros)
//   direct             O_DIRECT pwrite from 4 KiB-aligned buffers
//                      (the chunk copied into one, as a kernel would write it)
//   direct-sparse      O_DIRECT, zero pages skipped
//   map-write          fallocate, MAP_SHARED, MADV_POPULATE_WRITE, memcpy
//
// --pause S sleeps S seconds before each run: on a virtual machine, pages
// freed by one run and reused at once by the next are still backed by the
// host, while after a pause (the guest reports free pages back) fresh
// page-cache pages cost a host fault each, as they do in a real job.
//
// Run: volseg-mask-write --dir /tmp/volseg-bench --from mask.raw --repeat 5 [--pause 4]
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

constexpr std::size_t kPage = 4096;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t bytes) : size(bytes) {
    if (posix_memalign(&data, kPage, std::max(bytes, kPage)) != 0) throw std::runtime_error("posix_memalign");
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  void* data = nullptr;
  std::size_t size;
};

bool page_is_zero(const std::uint8_t* page, std::size_t n) {
  std::uint64_t any = 0;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, page + i, 8);
    any |= word;
  }
  for (std::size_t i = n & ~std::size_t{7}; i < n; ++i) any |= page[i];
  return any == 0;
}

void pwrite_all(int fd, const void* data, std::size_t size, std::uint64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t put = ::pwrite(fd, bytes, size, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail("pwrite " + path);
    bytes += put;
    size -= static_cast<std::size_t>(put);
    offset += static_cast<std::uint64_t>(put);
  }
}

// Writes [data, data + size) at offset, skipping whole file pages that are
// all zero: each run of non-zero pages is one pwrite.
void pwrite_sparse(int fd, const std::uint8_t* data, std::size_t size, std::uint64_t offset, const std::string& path) {
  std::size_t i = 0;
  while (i < size) {
    // Page boundaries of the file, not of the buffer.
    auto page_end = [&](std::size_t at) {
      const std::uint64_t next = ((offset + at) / kPage + 1) * kPage;
      return std::min<std::size_t>(size, static_cast<std::size_t>(next - offset));
    };
    std::size_t end = page_end(i);
    if (page_is_zero(data + i, end - i)) {
      i = end;
      continue;
    }
    std::size_t run_end = end;
    while (run_end < size) {
      const std::size_t next = page_end(run_end);
      if (page_is_zero(data + run_end, next - run_end)) break;
      run_end = next;
    }
    pwrite_all(fd, data + i, run_end - i, offset + i, path);
    i = run_end;
  }
}

struct Job {
  const std::uint8_t* mask;
  std::size_t size;
  std::size_t chunk;
  std::string path;
  bool sync;
};

void finish(int fd, const Job& job) {
  if (job.sync && ::fdatasync(fd) != 0) fail("fdatasync " + job.path);
  if (::close(fd) != 0) fail("close " + job.path);
}

int create(const Job& job, int extra_flags, bool reserve) {
  const int fd = ::open(job.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | extra_flags, 0644);
  if (fd < 0) fail("create " + job.path);
  if (reserve) {
    if (::fallocate(fd, 0, 0, static_cast<off_t>(job.size)) != 0) fail("fallocate " + job.path);
  } else if (::ftruncate(fd, static_cast<off_t>(job.size)) != 0) {
    fail("ftruncate " + job.path);
  }
  return fd;
}

void by_pwrite(const Job& job, bool reserve, bool sparse) {
  const int fd = create(job, 0, reserve);
  for (std::size_t at = 0; at < job.size; at += job.chunk) {
    const std::size_t n = std::min(job.chunk, job.size - at);
    if (sparse)
      pwrite_sparse(fd, job.mask + at, n, at, job.path);
    else
      pwrite_all(fd, job.mask + at, n, at, job.path);
  }
  finish(fd, job);
}

void by_direct(const Job& job, bool sparse) {
  const int fd = create(job, O_DIRECT, !sparse);
  AlignedBuffer buffer(job.chunk);
  for (std::size_t at = 0; at < job.size; at += job.chunk) {
    const std::size_t n = std::min(job.chunk, job.size - at);
    std::memcpy(buffer.data, job.mask + at, n);  // the kernel's output buffer, as segment has it
    if (n % kPage != 0) throw std::runtime_error("direct: --chunk and the size must be multiples of 4096");
    if (sparse)
      pwrite_sparse(fd, static_cast<const std::uint8_t*>(buffer.data), n, at, job.path);
    else
      pwrite_all(fd, buffer.data, n, at, job.path);
  }
  finish(fd, job);
}

void by_map(const Job& job) {
  const int fd = create(job, 0, true);
  for (std::size_t at = 0; at < job.size; at += job.chunk) {
    const std::size_t n = std::min(job.chunk, job.size - at);
    const std::size_t start = at / kPage * kPage, length = at + n - start;
    void* map = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
    if (map == MAP_FAILED) fail("mmap " + job.path);
    ::madvise(map, length, MADV_POPULATE_WRITE);  // best effort: faults otherwise
    std::memcpy(static_cast<std::uint8_t*>(map) + (at - start), job.mask + at, n);
    if (::munmap(map, length) != 0) fail("munmap " + job.path);
  }
  finish(fd, job);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int usage() {
  std::fprintf(stderr,
               "usage: volseg-mask-write --dir DIR [--from MASK | --size GiB --zero-share F] [--chunk BYTES]\n"
               "                         [--repeat N] [--pause S] [--sync] [--only METHOD ...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir, from;
  double size_gib = 1, zero_share = 0.5;
  std::size_t chunk = 3 << 20;
  int repeat = 3;
  double pause = 0;
  bool sync = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dir")
      dir = value();
    else if (a == "--from")
      from = value();
    else if (a == "--size")
      size_gib = std::stod(value());
    else if (a == "--zero-share")
      zero_share = std::stod(value());
    else if (a == "--chunk")
      chunk = std::stoull(value());
    else if (a == "--repeat")
      repeat = std::stoi(value());
    else if (a == "--sync")
      sync = true;
    else if (a == "--pause")
      pause = std::stod(value());
    else if (a == "--only")
      only.push_back(value());
    else
      return usage();
  }
  if (dir.empty() || chunk == 0 || repeat < 1) return usage();

  std::vector<std::uint8_t> mask;
  if (!from.empty()) {
    const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open " + from);
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail("stat " + from);
    mask.resize(static_cast<std::size_t>(st.st_size));
    for (std::size_t at = 0; at < mask.size();) {
      const ssize_t got = ::pread(fd, mask.data() + at, mask.size() - at, static_cast<off_t>(at));
      if (got <= 0) fail("read " + from);
      at += static_cast<std::size_t>(got);
    }
    ::close(fd);
  } else {
    mask.resize(static_cast<std::size_t>(size_gib * (1 << 30)) / kPage * kPage);
    std::mt19937_64 random(42);
    std::bernoulli_distribution zero(zero_share);
    for (std::size_t page = 0; page < mask.size(); page += kPage)
      if (!zero(random)) std::fill_n(mask.data() + page, kPage, std::uint8_t{1});
  }
  std::size_t zero_pages = 0;
  for (std::size_t page = 0; page < mask.size(); page += kPage)
    zero_pages += page_is_zero(mask.data() + page, std::min(kPage, mask.size() - page));

  const Job job{mask.data(), mask.size(), chunk, dir + "/volseg-mask-write.tmp", sync};
  std::map<std::string, std::function<void()>> methods = {
      {"pwrite-fallocate", [&] { by_pwrite(job, true, false); }},
      {"pwrite-truncate", [&] { by_pwrite(job, false, false); }},
      {"pwrite-sparse", [&] { by_pwrite(job, false, true); }},
      {"direct", [&] { by_direct(job, false); }},
      {"direct-sparse", [&] { by_direct(job, true); }},
      {"map-write", [&] { by_map(job); }},
  };
  std::vector<std::string> order;
  for (const auto& [name, run] : methods)
    if (only.empty() || std::find(only.begin(), only.end(), name) != only.end()) order.push_back(name);
  std::map<std::string, std::vector<double>> seconds;
  std::mt19937 shuffle(7);
  for (int round = 0; round < repeat; ++round) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (const auto& name : order) {
      ::unlink(job.path.c_str());
      if (pause > 0) ::usleep(static_cast<useconds_t>(pause * 1e6));
      const auto start = std::chrono::steady_clock::now();
      methods[name]();
      seconds[name].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (::unlink(job.path.c_str()) != 0) fail("unlink " + job.path);
    }
  }
  std::printf("# %zu bytes in %zu-byte chunks, %.1f%% of 4 KiB pages zero%s, %.1f s pause before each run\n",
              mask.size(), chunk,
              100.0 * static_cast<double>(zero_pages) / static_cast<double>((mask.size() + kPage - 1) / kPage),
              sync ? ", fdatasync before close" : "", pause);
  std::printf("method,median_s,min_s,max_s,gb_s\n");
  for (const auto& [name, times] : seconds)
    std::printf("%s,%.4f,%.4f,%.4f,%.3f\n", name.c_str(), median(times), *std::min_element(times.begin(), times.end()),
                *std::max_element(times.begin(), times.end()), static_cast<double>(mask.size()) / median(times) / 1e9);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "volseg-mask-write: error: %s\n", e.what());
  return 1;
}
