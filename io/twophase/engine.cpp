// SPDX-License-Identifier: MIT
// The two-phase engine; the algorithm is described in volseg/io/twophase.hpp.
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <exception>
#include <limits>
#include <numeric>

#include "buffer_pool.hpp"
#include "file_io.hpp"
#include "round_exchange.hpp"
#include "rounds.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/io/twophase.hpp"

namespace volseg::io::twophase {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Adds the wall time of fn to an accumulator.
template <class Fn>
void timed(double& total, Fn&& fn) {
  const auto start = Clock::now();
  fn();
  total += seconds_since(start);
}

using detail::BufferPool;
using detail::Cut;
using detail::cut_into_rounds;
using detail::merge_runs;
using detail::Piece;
using detail::place_windows;
using detail::RoundCursor;
using detail::RoundPlan;
using detail::Slot;

struct Request {
  std::uint64_t offset = 0, length = 0;
};

// Window starts per aggregator sent in the fixed-size exchange, plus the count.
constexpr int kWindowHead = 8;

// Aggregators in the order ROMIO picks them by default: the first rank of
// every node, then the second of every node, and so on.
std::vector<int> choose_aggregators(const Comm& comm, const Options& options, int& asked) {
  const int size = comm.size();
  if (!options.cb_config.empty()) {
    std::vector<bool> named(static_cast<std::size_t>(size), false);
    for (int rank : options.cb_config) {
      if (rank < 0 || rank >= size)
        throw Error("twophase: cb_config names rank " + std::to_string(rank) + " but the job has ranks 0 to " +
                    std::to_string(size - 1));
      if (named[static_cast<std::size_t>(rank)])
        throw Error("twophase: cb_config names rank " + std::to_string(rank) + " twice");
      named[static_cast<std::size_t>(rank)] = true;
    }
    asked = static_cast<int>(options.cb_config.size());
    return options.cb_config;
  }
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int node_rank = 0, leader = comm.rank();
  MPI_Comm_rank(node, &node_rank);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
  MPI_Comm_free(&node);
  std::array<int, 2> mine{node_rank, leader};
  std::vector<int> all(2 * static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(mine.data(), 2, MPI_INT, all.data(), 2, MPI_INT, comm.get()), "MPI_Allgather");
  std::vector<int> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::pair(all[2 * a], all[2 * a + 1]) < std::pair(all[2 * b], all[2 * b + 1]);
  });
  int nodes = 0;
  for (int r = 0; r < size; ++r) nodes += all[2 * static_cast<std::size_t>(r)] == 0;
  asked = options.cb_nodes > 0 ? options.cb_nodes : nodes;
  order.resize(static_cast<std::size_t>(std::min(asked, size)));  // more than ranks: clamped, reported
  return order;
}

}  // namespace

struct File::Impl {
  Comm comm;
  std::string path;
  std::string name;  // the file in messages: a temporary file is named by its final name
  Mode mode;
  Options options;
  std::vector<int> aggregators;
  int asked_aggregators = 0;
  int me = -1;                // my aggregator index
  int fd = -1;                // aggregators, and every rank where a call may go independent
  detail::DirectFile direct;  // the same file with O_DIRECT, for writes of whole blocks
  bool dirty = false;         // written independently since the last sync
  PartitionContext context;
  std::unique_ptr<Partitioner> partitioner;
  std::string partition_used;
  // The two collective buffers, allocated without initialisation (only the
  // bytes a round fills or reads are ever used) and grown to the largest
  // round's need, never to cb_buffer_size up front.
  std::array<BufferPool::Buffer, 2> buffers;
  std::uint64_t round_bytes = 0;  // what the current call's rounds need (aggregators)
  Timing last, totals;

  Impl(const Comm& parent, const std::string& file, const std::string& shown, Mode m, Options o)
      : comm(parent.duplicate()), path(file), name(shown.empty() ? file : shown), mode(m), options(std::move(o)) {
    // Options come from from_hints() or straight from code: the same checks
    // either way (every rank has the same options, so all fail alike).
    if (options.cb_buffer_size == 0 || options.cb_buffer_size > (std::uint64_t{1} << 30))
      throw Error("twophase: cb_buffer_size must be between 1 byte and 1 GiB");
    partitioner = make_partitioner(options.partition);
    partition_used = partitioner->name();
    collectively(comm, [&] { aggregators = choose_aggregators(comm, options, asked_aggregators); });
    for (std::size_t a = 0; a < aggregators.size(); ++a)
      if (aggregators[a] == comm.rank()) me = static_cast<int>(a);
    std::array<std::uint64_t, 2> facts{0, 0};  // lock size, file size, from the first aggregator
    // A write-mode File also serves read_all.
    const bool may_go_independent =
        options.cb_read != Aggregation::enable || (mode == Mode::write && options.cb_write != Aggregation::enable);
    collectively(comm, [&] {
      if (me < 0 && !may_go_independent) return;
      trace::Span span(trace::Op::open);
      fd = ::open(path.c_str(), (mode == Mode::read ? O_RDONLY : O_RDWR) | O_CLOEXEC);
      if (fd < 0) throw_errno("open", name);
      struct stat st {};
      if (::fstat(fd, &st) != 0) throw_errno("stat", name);
      if (!S_ISREG(st.st_mode)) throw Error(name + " is not a regular file");
      facts = {static_cast<std::uint64_t>(st.st_blksize), static_cast<std::uint64_t>(st.st_size)};
      if (mode == Mode::write && options.direct_write) direct.open(path);
    });
    check_mpi(MPI_Bcast(facts.data(), 2, MPI_UINT64_T, aggregators[0], comm.get()), "MPI_Bcast");
    context.aggregators = static_cast<int>(aggregators.size());
    context.lock_size = options.lock_size ? options.lock_size : std::max<std::uint64_t>(facts[0], 1);
    context.io_servers = options.io_servers;
    context.file_size = facts[1];
    context.realm_size = options.realm_size;
    context.fs_profile = options.fs_profile;
  }

  ~Impl() {
    if (fd >= 0) ::close(fd);
    for (auto& buffer : buffers) BufferPool::instance().give(std::move(buffer));
  }

  std::byte* buffer(std::size_t which, std::uint64_t bytes) {
    if (buffers[which].size < bytes) {
      buffers[which] = {};  // the old one goes before the new one is faulted in
      buffers[which] = BufferPool::instance().take(bytes);
    }
    return buffers[which].bytes.get();
  }

  void collective(std::vector<Piece> pieces, Direction direction);
  void independent(const std::vector<Piece>& pieces, Direction direction, bool interleaved, Timing& timing);
  void refuse_past_max(bool may_exceed, std::size_t count, const char* where);
  struct Call;
};

// The extents of every rank's accesses, agreed in step 1.
struct AccessRegion {
  bool empty = true;  // no rank has a byte to move
  bool interleaved = false;
  std::uint64_t begin = 0, end = 0;
  std::uint64_t all_pieces = 0;  // every rank's piece count, summed
};

// One collective call (the steps of twophase.hpp): what each step hands the next.
struct File::Impl::Call {
  Impl& file;
  Direction direction;
  std::vector<Piece> pieces;
  Timing timing;
  int size;
  std::vector<std::vector<Piece>> to;               // my pieces per aggregator index
  std::vector<std::vector<Request>> from;           // requests to me per client
  std::vector<std::vector<std::uint64_t>> windows;  // round r's window starts, per aggregator
  FileDomains domains;
  std::uint64_t rounds = 0;
  std::vector<RoundCursor> client_cursors, aggregator_cursors;
  std::exception_ptr failure;  // an I/O error here still joins every round, then all ranks throw

  Call(Impl& f, std::vector<Piece> p, Direction d)
      : file(f),
        direction(d),
        pieces(std::move(p)),
        size(f.comm.size()),
        to(f.aggregators.size()),
        from(static_cast<std::size_t>(size)),
        windows(f.aggregators.size()) {
    timing.calls = 1;
  }

  AccessRegion agree_on_region();
  int independent_path(const AccessRegion& region) const;
  bool cut_at_domains(const AccessRegion& region);
  void exchange_requests(bool may_exceed);
  std::vector<std::uint64_t> place_my_windows();
  void share_windows(const std::vector<std::uint64_t>& my_windows);
  void cut_into_round_cursors();
  std::unique_ptr<RoundPlan> plan_round(std::uint64_t round);
  void read_rounds();
  void write_rounds();

  // The steps of a round, each timed. File I/O errors are kept, not thrown,
  // so this rank still joins every exchange.
  template <class Fn>
  void guarded(Fn&& fn) {
    if (failure) return;
    try {
      timed(timing.io, fn);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  void read_in(RoundPlan& p) {
    guarded([&] { detail::read_groups(file.fd, file.name, p, timing); });
  }
  // Data sieving on writes reads the covering range first, so the holes
  // between runs are written back unchanged.
  void read_holes(RoundPlan& p) {
    guarded([&] { detail::read_holes(file.fd, file.name, p, timing); });
  }
  void write_out(RoundPlan& p) {
    guarded(
        [&] { detail::write_groups(file.fd, file.direct.is_open() ? &file.direct : nullptr, file.name, p, timing); });
  }
  void post(RoundPlan& p) {
    timed(timing.exchange, [&] { detail::post_exchange(file.comm, file.options.exchange, direction, p); });
  }
  void complete(RoundPlan& p) {
    timed(timing.exchange, [&] { detail::complete_exchange(p); });
  }
  std::unique_ptr<RoundPlan> planned(std::uint64_t round) {
    std::unique_ptr<RoundPlan> p;
    timed(timing.requests, [&] { p = plan_round(round); });
    return p;
  }
};

void File::Impl::collective(std::vector<Piece> pieces, Direction direction) {
  const auto call_start = Clock::now();
  Call call(*this, std::move(pieces), direction);
  bool nothing = false;
  int go_independent = 0;  // 1: independently though interleaved, 2: not interleaved
  timed(call.timing.requests, [&] {
    const AccessRegion region = call.agree_on_region();  // 1.
    nothing = region.empty;
    if (nothing) return;
    go_independent = call.independent_path(region);
    if (go_independent) return;
    call.exchange_requests(call.cut_at_domains(region));  // 2. and 3.
    call.share_windows(call.place_my_windows());          // 4.
  });
  if (go_independent) {
    independent(call.pieces, direction, go_independent == 1, call.timing);
  } else if (!nothing) {
    call.timing.rounds = call.rounds;
    timed(call.timing.requests, [&] { call.cut_into_round_cursors(); });
    if (direction == Direction::read)
      call.read_rounds();  // 5.
    else
      call.write_rounds();
    agree(comm, call.failure);
  }
  last = call.timing;
  last.total = seconds_since(call_start);
  totals.add(last);
}

// One agreement: every rank learns whether any rank's count passed max_pieces.
void File::Impl::refuse_past_max(bool may_exceed, std::size_t count, const char* where) {
  if (!may_exceed) return;
  std::exception_ptr too_many;
  if (count > static_cast<std::size_t>(options.max_pieces))
    too_many = std::make_exception_ptr(RankError("twophase: more than " + std::to_string(options.max_pieces) +
                                                 " pieces " + where + "; split the call"));
  agree(comm, too_many);
}

// 1. Sort, and the aggregate access region.
AccessRegion File::Impl::Call::agree_on_region() {
  std::erase_if(pieces, [](const Piece& p) { return p.length == 0; });
  merge_runs(pieces, {0, pieces.size()}, [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  // Every rank's extent [first byte, end), {max, 0} when it has none, and
  // whether its access is valid: a bad access on one rank fails the call on
  // every rank here, before any rank waits in a later collective.
  // The piece count rides along (fourth value): with it every rank can
  // tell whether any count could pass max_pieces, and skip the two
  // agreements below when none can. Each collective is a point where every
  // rank must be running at once; on a shared node (CPU load beside the
  // job, oversubscribed ranks) each costs up to a scheduler tick.
  std::array<std::uint64_t, 4> extent{std::numeric_limits<std::uint64_t>::max(), 0, 0, pieces.size()};
  for (const auto& piece : pieces) {
    if (piece.offset > std::numeric_limits<std::uint64_t>::max() - piece.length) {
      extent = {std::numeric_limits<std::uint64_t>::max(), 0, 1, 0};
      break;
    }
    extent[0] = std::min(extent[0], piece.offset);
    extent[1] = std::max(extent[1], piece.offset + piece.length);
  }
  std::vector<std::array<std::uint64_t, 4>> extents(static_cast<std::size_t>(size));
  {
    trace::Span span(trace::Op::exchange, -1, 4 * sizeof(std::uint64_t) * static_cast<std::uint64_t>(size));
    check_mpi(MPI_Allgather(extent.data(), 4, MPI_UINT64_T, extents.data(), 4, MPI_UINT64_T, file.comm.get()),
              "MPI_Allgather");
  }
  AccessRegion region;
  for (int r = 0; r < size; ++r) {
    if (extents[static_cast<std::size_t>(r)][2] != 0)
      throw Error(r == file.comm.rank()
                      ? "twophase: an access past 2^64 bytes"
                      : "twophase: rank " + std::to_string(r) + " asked for an access past 2^64 bytes");
    region.all_pieces += extents[static_cast<std::size_t>(r)][3];
  }
  std::erase_if(extents, [](const auto& e) { return e[1] == 0; });
  if (extents.empty()) return region;
  std::sort(extents.begin(), extents.end());
  region.empty = false;
  for (std::size_t i = 1; i < extents.size(); ++i)
    region.interleaved = region.interleaved || extents[i][0] < extents[i - 1][1];
  region.begin = extents.front()[0];
  for (const auto& e : extents) region.end = std::max(region.end, e[1]);
  return region;
}

// 0: aggregate; else each rank does its own I/O (1: though interleaved, 2: not interleaved).
int File::Impl::Call::independent_path(const AccessRegion& region) const {
  const Aggregation aggregation = direction == Direction::read ? file.options.cb_read : file.options.cb_write;
  if (aggregation == Aggregation::disable || (aggregation == Aggregation::automatic && !region.interleaved))
    return region.interleaved ? 1 : 2;
  return 0;
}

// 2. File domains, and my pieces cut at their boundaries. Returns whether
// any rank's piece count may pass max_pieces.
bool File::Impl::Call::cut_at_domains(const AccessRegion& region) {
  domains = file.partitioner->partition(Region{region.begin, region.end}, direction, file.context);
  file.partition_used = file.partitioner->chosen();
  // Cutting at domain boundaries splits at most one piece per rank at
  // each: below this bound no rank sends, and no aggregator receives,
  // more than max_pieces, and the agreements are skipped.
  const std::uint64_t bound =
      region.all_pieces + static_cast<std::uint64_t>(size) * domains.pieces(region.begin, region.end);
  for (const auto& piece : pieces) {
    std::uint64_t at = piece.offset;
    const std::uint64_t end = piece.offset + piece.length;
    while (at < end) {
      const std::uint64_t stop = std::min(end, domains.piece_end(at));
      to[static_cast<std::size_t>(domains.owner(at))].push_back(
          Piece{at, stop - at, piece.memory + (at - piece.offset)});
      at = stop;
    }
  }
  return bound > static_cast<std::uint64_t>(file.options.max_pieces);
}

// 3. Each aggregator learns its requests.
void File::Impl::Call::exchange_requests(bool may_exceed) {
  const auto& aggregators = file.aggregators;
  std::vector<int> send_counts(static_cast<std::size_t>(size), 0), receive_counts(static_cast<std::size_t>(size));
  std::vector<std::uint64_t> outgoing;
  std::vector<int> send_displs(static_cast<std::size_t>(size), 0), receive_displs(static_cast<std::size_t>(size), 0);
  {
    std::vector<std::vector<std::uint64_t>> per_rank(static_cast<std::size_t>(size));
    for (std::size_t a = 0; a < aggregators.size(); ++a)
      for (const auto& piece : to[a]) {
        per_rank[static_cast<std::size_t>(aggregators[a])].push_back(piece.offset);
        per_rank[static_cast<std::size_t>(aggregators[a])].push_back(piece.length);
      }
    std::size_t total = 0;
    for (const auto& list : per_rank) total += list.size();
    // Refused on every rank before the exchange: a rank that left alone
    // would leave the others waiting in MPI_Alltoall for ever.
    file.refuse_past_max(may_exceed, total / 2, "in one collective call");
    for (int r = 0; r < size; ++r) {
      const auto& list = per_rank[static_cast<std::size_t>(r)];
      send_displs[static_cast<std::size_t>(r)] = static_cast<int>(outgoing.size());
      send_counts[static_cast<std::size_t>(r)] = static_cast<int>(list.size());
      outgoing.insert(outgoing.end(), list.begin(), list.end());
    }
  }
  {
    trace::Span span(trace::Op::exchange, -1, 2 * sizeof(int) * static_cast<std::uint64_t>(size));
    check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, file.comm.get()),
              "MPI_Alltoall");
  }
  std::size_t incoming_total = 0;
  for (int r = 0; r < size; ++r) {
    receive_displs[static_cast<std::size_t>(r)] =
        static_cast<int>(std::min<std::size_t>(incoming_total, std::numeric_limits<int>::max()));
    incoming_total += static_cast<std::size_t>(receive_counts[static_cast<std::size_t>(r)]);
  }
  // Only aggregators receive: the refusal must reach every rank before the
  // MPI_Alltoallv they would otherwise wait in.
  file.refuse_past_max(may_exceed, incoming_total / 2, "for one aggregator in one call");
  std::vector<std::uint64_t> incoming(incoming_total);
  {
    trace::Span span(trace::Op::exchange, -1, (outgoing.size() + incoming_total) * sizeof(std::uint64_t));
    check_mpi(MPI_Alltoallv(outgoing.data(), send_counts.data(), send_displs.data(), MPI_UINT64_T, incoming.data(),
                            receive_counts.data(), receive_displs.data(), MPI_UINT64_T, file.comm.get()),
              "MPI_Alltoallv");
  }
  for (int r = 0; r < size; ++r) {
    auto& list = from[static_cast<std::size_t>(r)];
    list.reserve(static_cast<std::size_t>(receive_counts[static_cast<std::size_t>(r)] / 2));
    const auto* at = incoming.data() + receive_displs[static_cast<std::size_t>(r)];
    for (int i = 0; i + 1 < receive_counts[static_cast<std::size_t>(r)]; i += 2)
      list.push_back(Request{at[i], at[i + 1]});
  }
}

// 4. My rounds' windows: cb_buffer_size bytes of my domain each, placed
//    over the requested bytes only, so gaps between requests cost no rounds.
std::vector<std::uint64_t> File::Impl::Call::place_my_windows() {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // requested coordinates [begin, end)
  std::size_t count = 0;
  for (const auto& requests : from) count += requests.size();
  spans.reserve(count);
  std::vector<std::size_t> client_starts;  // each client's spans are in file order: merged, not sorted
  for (const auto& requests : from) {
    client_starts.push_back(spans.size());
    for (const Request& request : requests) {
      const std::uint64_t c = domains.coordinate(file.me, request.offset);
      spans.emplace_back(c, c + request.length);  // a request lies in one piece: coordinates run one for one
    }
  }
  client_starts.push_back(spans.size());
  merge_runs(spans, std::move(client_starts), std::less<>{});
  return place_windows(spans, file.options.cb_buffer_size, file.round_bytes);
}

// Every rank learns every aggregator's windows: the count and the first
// kWindowHead - 1 starts in one MPI_Allgather (a call of few rounds needs
// no more), the rest in an MPI_Allgatherv only when some rank has them.
void File::Impl::Call::share_windows(const std::vector<std::uint64_t>& my_windows) {
  const MPI_Comm comm = file.comm.get();
  std::array<std::uint64_t, kWindowHead> head{};
  head[0] = my_windows.size();
  std::copy_n(my_windows.begin(), std::min<std::size_t>(my_windows.size(), kWindowHead - 1), head.begin() + 1);
  std::vector<std::array<std::uint64_t, kWindowHead>> heads(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(head.data(), kWindowHead, MPI_UINT64_T, heads.data(), kWindowHead, MPI_UINT64_T, comm),
            "MPI_Allgather");
  std::vector<int> tail_counts(static_cast<std::size_t>(size)), tail_displs(static_cast<std::size_t>(size));
  std::uint64_t tail_total = 0;
  for (int r = 0; r < size; ++r) {
    const std::uint64_t n = heads[static_cast<std::size_t>(r)][0];
    if (n > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      throw Error("twophase: more than 2^31 rounds in one call");
    tail_counts[static_cast<std::size_t>(r)] = static_cast<int>(n > kWindowHead - 1 ? n - (kWindowHead - 1) : 0);
    tail_displs[static_cast<std::size_t>(r)] = static_cast<int>(tail_total);
    tail_total += static_cast<std::uint64_t>(tail_counts[static_cast<std::size_t>(r)]);
  }
  std::vector<std::uint64_t> tails(tail_total);
  if (tail_total > 0) {
    const int mine = tail_counts[static_cast<std::size_t>(file.comm.rank())];
    check_mpi(MPI_Allgatherv(my_windows.data() + (mine ? kWindowHead - 1 : 0), mine, MPI_UINT64_T, tails.data(),
                             tail_counts.data(), tail_displs.data(), MPI_UINT64_T, comm),
              "MPI_Allgatherv");
  }
  for (std::size_t a = 0; a < file.aggregators.size(); ++a) {
    const auto r = static_cast<std::size_t>(file.aggregators[a]);
    const std::uint64_t n = heads[r][0];
    windows[a].assign(heads[r].begin() + 1, heads[r].begin() + 1 + std::min<std::uint64_t>(n, kWindowHead - 1));
    windows[a].insert(windows[a].end(), tails.begin() + tail_displs[r],
                      tails.begin() + tail_displs[r] + tail_counts[r]);
    rounds = std::max<std::uint64_t>(rounds, windows[a].size());
  }
}

// My pieces cut per aggregator's rounds (client side), and the requests
// to me cut per my rounds (aggregator side).
void File::Impl::Call::cut_into_round_cursors() {
  const std::uint64_t window = file.options.cb_buffer_size;
  const int me = file.me;
  client_cursors.resize(file.aggregators.size());
  aggregator_cursors.resize(static_cast<std::size_t>(size));
  for (std::size_t a = 0; a < file.aggregators.size(); ++a)
    client_cursors[a] = RoundCursor(cut_into_rounds(
        to[a], windows[a], window, [&](std::uint64_t x) { return domains.coordinate(static_cast<int>(a), x); }));
  if (me >= 0)
    for (int r = 0; r < size; ++r)
      aggregator_cursors[static_cast<std::size_t>(r)] =
          RoundCursor(cut_into_rounds(from[static_cast<std::size_t>(r)], windows[static_cast<std::size_t>(me)], window,
                                      [&](std::uint64_t x) { return domains.coordinate(me, x); }));
}

// One round's blocks and slots on both sides, and the aggregator's file
// accesses of it.
std::unique_ptr<RoundPlan> File::Impl::Call::plan_round(std::uint64_t round) {
  auto p = std::make_unique<RoundPlan>();
  p->mine.resize(static_cast<std::size_t>(size));
  p->theirs.resize(static_cast<std::size_t>(size));
  for (std::size_t a = 0; a < file.aggregators.size(); ++a) {
    auto& blocks = p->mine[static_cast<std::size_t>(file.aggregators[a])];
    client_cursors[a].take(round,
                           [&](const Cut& cut) { blocks.emplace_back(to[a][cut.item].memory + cut.skip, cut.length); });
  }
  if (file.me < 0) return p;
  p->buffer = file.buffer(round % 2, file.round_bytes);
  std::vector<Slot> all;
  std::vector<std::size_t> client_starts;
  for (int r = 0; r < size; ++r) {
    client_starts.push_back(all.size());
    auto& slots = p->theirs[static_cast<std::size_t>(r)];
    const auto& requests = from[static_cast<std::size_t>(r)];
    aggregator_cursors[static_cast<std::size_t>(r)].take(round, [&](const Cut& cut) {
      slots.push_back(Slot{requests[cut.item].offset + cut.skip, cut.length, cut.position, r, slots.size()});
    });
    all.insert(all.end(), slots.begin(), slots.end());
  }
  // Coalesce (overlapping reads too) inside each domain piece.
  client_starts.push_back(all.size());
  merge_runs(all, std::move(client_starts), [](const Slot& a, const Slot& b) { return a.offset < b.offset; });
  p->io = detail::coalesce(all, domains, file.options);
  const int self = file.comm.rank();
  p->self_direct.assign(p->theirs[static_cast<std::size_t>(self)].size(), 0);
  for (auto& group : p->io) {
    const Slot& only = group.runs.front();
    if (group.slots == 1 && only.source == self) {
      group.direct = const_cast<std::byte*>(p->mine[static_cast<std::size_t>(self)][only.index].first);
      p->self_direct[only.index] = 1;
    }
  }
  return p;
}

// 5. The rounds of a read, two buffers deep.
void File::Impl::Call::read_rounds() {
  auto current = planned(0);
  read_in(*current);
  for (std::uint64_t round = 0; round < rounds; ++round) {
    post(*current);
    std::unique_ptr<RoundPlan> next;
    if (round + 1 < rounds) {
      next = planned(round + 1);
      read_in(*next);  // into the other buffer, while this round's exchange flies
    }
    complete(*current);
    current = std::move(next);
  }
}

// 5. The rounds of a write, two buffers deep.
void File::Impl::Call::write_rounds() {
  auto current = planned(0);
  read_holes(*current);
  std::unique_ptr<RoundPlan> previous;
  for (std::uint64_t round = 0; round < rounds; ++round) {
    post(*current);
    if (previous) write_out(*previous);  // the other buffer, while this round's exchange flies
    std::unique_ptr<RoundPlan> next;
    if (round + 1 < rounds) next = planned(round + 1);
    complete(*current);
    if (next) read_holes(*next);  // its buffer was written out above
    previous = std::move(current);
    current = std::move(next);
  }
  if (previous) write_out(*previous);
}

// Every rank its own pieces; errors are agreed on, as in the rounds.
void File::Impl::independent(const std::vector<Piece>& pieces, Direction direction, bool interleaved, Timing& timing) {
  timing.independent = 1;
  std::exception_ptr failure;
  try {
    const detail::IndependentCall call{fd,
                                       name,
                                       options,
                                       !interleaved,
                                       [this](std::uint64_t bytes) { return buffer(0, bytes); },
                                       direct.is_open() ? &direct : nullptr};
    if (direction == Direction::read) {
      detail::independent_read(call, pieces, timing);
    } else {
      dirty = dirty || !pieces.empty();
      detail::independent_write(call, pieces, timing);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree(comm, failure);
}

File::File(const Comm& comm, const std::string& path, Mode mode, Options options, const std::string& name)
    : impl_(std::make_unique<Impl>(comm, path, name, mode, std::move(options))) {}

File::~File() = default;

void File::read_all(std::span<const Access> accesses) {
  if (impl_->mode != Mode::read && impl_->mode != Mode::write) throw Error("twophase: file not open");
  std::vector<Piece> pieces;
  pieces.reserve(accesses.size());
  for (const auto& access : accesses) pieces.push_back(Piece{access.offset, access.length, access.memory});
  impl_->collective(std::move(pieces), Direction::read);
}

void File::write_all(std::span<const ConstAccess> accesses) {
  if (impl_->mode != Mode::write) throw Error("twophase: " + impl_->name + " is open for reading only");
  std::vector<Piece> pieces;
  pieces.reserve(accesses.size());
  for (const auto& access : accesses)  // the engine never writes through these
    pieces.push_back(Piece{access.offset, access.length, const_cast<std::byte*>(access.memory)});
  impl_->collective(std::move(pieces), Direction::write);
}

void File::sync() {
  collectively(impl_->comm, [&] {
    // Aggregators, and ranks that wrote on their own; a rank that only
    // read would flush other ranks' pages a second time.
    const bool wrote = impl_->me >= 0 || std::exchange(impl_->dirty, false);
    if (impl_->fd < 0 || !wrote) return;
    trace::Span span(trace::Op::sync);
    const auto fault = faults::at(faults::Call::fsync);
    if ((fault.error ? (errno = fault.error, -1) : ::fdatasync(impl_->fd)) != 0) throw_errno("fdatasync", impl_->name);
  });
}

void File::close() {
  collectively(impl_->comm, [&] {
    const int fd = std::exchange(impl_->fd, -1);
    if (fd < 0) return;
    impl_->direct.close(impl_->name);
    trace::Span span(trace::Op::close);
    const auto fault = faults::at(faults::Call::close);
    int closed = ::close(fd);
    if (fault.error) errno = fault.error, closed = -1;
    if (closed != 0) throw_errno("close", impl_->name);
  });
}

const Timing& File::last_call() const { return impl_->last; }
const Timing& File::totals() const { return impl_->totals; }
const std::vector<int>& File::aggregators() const { return impl_->aggregators; }
std::string File::partition() const { return impl_->partition_used; }
const Options& File::options() const { return impl_->options; }
std::uint64_t File::lock_size() const { return impl_->context.lock_size; }

std::string File::describe() const {
  const auto& o = impl_->options;
  std::string text = "volseg two-phase: " + std::to_string(impl_->aggregators.size()) + " aggregator(s)";
  if (impl_->asked_aggregators > static_cast<int>(impl_->aggregators.size()))
    text += " (" + std::to_string(impl_->asked_aggregators) + " asked, clamped to the ranks)";
  text += ", partition " + impl_->partition_used + ", lock " + std::to_string(impl_->context.lock_size) +
          " B, buffer " + std::to_string(o.cb_buffer_size) + " B, exchange " +
          (o.exchange == Exchange::alltoallw ? "alltoallw" : "p2p") + ", ds " +
          (o.sieving == Sieving::always  ? "always"
           : o.sieving == Sieving::never ? "never"
                                         : "below " + std::to_string(o.ds_threshold) + " B");
  auto name = [](Aggregation a) {
    return a == Aggregation::automatic ? "automatic" : a == Aggregation::enable ? "enable" : "disable";
  };
  text += std::string(", cb_read ") + name(o.cb_read) + ", cb_write " + name(o.cb_write);
  if (impl_->mode == Mode::write)
    text += impl_->direct.is_open() ? ", direct writes of whole blocks" : ", buffered writes";
  return text;
}

}  // namespace volseg::io::twophase
