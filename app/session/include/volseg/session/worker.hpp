// SPDX-License-Identifier: MIT
// Rank 0's worker thread. MPI, IceT and rank 0's offscreen rendering all run
// on this one thread (a GL context belongs to one thread); the window's
// thread only posts requests and receives replies, so it never waits on the
// other ranks. A request posted with a `replaces` key (an interactive frame)
// replaces one still queued with the same key (a page's own frames replace
// only each other): a camera drag asks faster than frames come. Cancel reaches a running job
// through a flag the job polls (segment::Stop carries it to every rank).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "volseg/session/requests.hpp"
#include "volseg/session/session.hpp"

namespace volseg::session {

// A request as a front end posts it: its label (copied into the reply's
// tag) and its replacement key (empty: never replaced).
struct Posted {
  Request request;
  Json tag;
  std::string replaces;
};

class Worker {
 public:
  using ReplyFn = std::function<void(std::shared_ptr<Reply>)>;
  // Starts the thread. comm is every rank's (the others call serve() on it);
  // on_reply and on_progress run on the worker thread.
  Worker(Comm comm, ReplyFn on_reply, segment::ProgressObserver on_progress);
  ~Worker();  // quit()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void post(Request request, Json tag = nullptr, std::string replaces = {});
  // Stops the running job (segment) and drops the requests still queued;
  // returns those, so a front end can answer each one.
  std::deque<Posted> cancel();
  // Ends every rank's loop after the request under way; joins the thread.
  void quit();
  // Requests queued or running, and replies not yet delivered().
  int pending() const;
  // The window has taken a reply in (the first thing its slot does): until
  // then the reply waits in the event queue and counts as pending, so an
  // unattended script does not finish before the last reply is shown.
  void delivered();

 private:
  void run();

  Comm comm_;
  ReplyFn on_reply_;
  segment::ProgressObserver on_progress_;
  segment::CancelFlag cancel_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Posted> queue_;
  bool running_request_ = false, quitting_ = false;
  int replies_out_ = 0;  // sent to the window, not yet delivered()
  std::thread thread_;
};

}  // namespace volseg::session
