// SPDX-License-Identifier: MIT
#include "volseg/session/worker.hpp"

#include "volseg/session/transport.hpp"

#include <algorithm>

namespace volseg::session {

Worker::Worker(Comm comm, ReplyFn on_reply, segment::ProgressObserver on_progress)
    : comm_(std::move(comm)), on_reply_(std::move(on_reply)), on_progress_(std::move(on_progress)) {
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { quit(); }

void Worker::post(Request request, Json tag, std::string replaces) {
  std::lock_guard lock(mutex_);
  if (quitting_) return;
  Posted posted{std::move(request), std::move(tag), std::move(replaces)};
  if (!posted.replaces.empty())
    for (auto& queued : queue_)
      if (queued.replaces == posted.replaces) {
        queued = std::move(posted);
        return;
      }
  queue_.push_back(std::move(posted));
  wake_.notify_one();
}

std::deque<Posted> Worker::cancel() {
  std::lock_guard lock(mutex_);
  std::deque<Posted> dropped;
  dropped.swap(queue_);
  if (running_request_) cancel_.request();
  return dropped;
}

void Worker::quit() {
  {
    std::lock_guard lock(mutex_);
    if (quitting_ && !thread_.joinable()) return;
    quitting_ = true;
    if (running_request_) cancel_.request();
    queue_.clear();
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

int Worker::pending() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(queue_.size()) + (running_request_ ? 1 : 0) + replies_out_;
}

void Worker::delivered() {
  std::lock_guard lock(mutex_);
  replies_out_ = std::max(0, replies_out_ - 1);
}

void Worker::run() {
  auto session = std::make_unique<Session>(comm_);
  Hooks hooks{&cancel_, on_progress_};
  for (;;) {
    Posted posted;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return quitting_ || !queue_.empty(); });
      if (quitting_) break;
      posted = std::move(queue_.front());
      queue_.pop_front();
      running_request_ = true;
      cancel_.reset();
    }
    send_request(comm_, posted.request);
    auto reply = std::make_shared<Reply>(session->execute(posted.request, hooks));
    reply->tag = std::move(posted.tag);
    {
      std::lock_guard lock(mutex_);
      running_request_ = false;
      ++replies_out_;
    }
    on_reply_(std::move(reply));
  }
  send_request(comm_, QuitRequest{});
  session.reset();  // collective, with the other ranks leaving serve()
}

}  // namespace volseg::session
