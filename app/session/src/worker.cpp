// SPDX-License-Identifier: MIT
#include "volseg/session/worker.hpp"

#include <algorithm>

namespace volseg::session {

Worker::Worker(Comm comm, ReplyFn on_reply, segment::ProgressObserver on_progress)
    : comm_(std::move(comm)), on_reply_(std::move(on_reply)), on_progress_(std::move(on_progress)) {
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { quit(); }

void Worker::post(Json request) {
  std::lock_guard lock(mutex_);
  if (quitting_) return;
  // "replaceable": true, or a key (a page's own frames replace only each other).
  const Json key = request.contains("replaceable") ? request.at("replaceable") : Json(false);
  if (key != Json(false))
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (it->contains("replaceable") && it->at("replaceable") == key) {
        *it = std::move(request);
        return;
      }
  queue_.push_back(std::move(request));
  wake_.notify_one();
}

std::deque<Json> Worker::cancel() {
  std::lock_guard lock(mutex_);
  std::deque<Json> dropped;
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
    Json request;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return quitting_ || !queue_.empty(); });
      if (quitting_) break;
      request = std::move(queue_.front());
      queue_.pop_front();
      running_request_ = true;
      cancel_.reset();
    }
    send_request(comm_, request.dump());
    auto reply = std::make_shared<Reply>(session->execute(request, hooks));
    if (request.contains("tag")) reply->data["tag"] = request.at("tag");
    {
      std::lock_guard lock(mutex_);
      running_request_ = false;
      ++replies_out_;
    }
    on_reply_(std::move(reply));
  }
  send_request(comm_, Json{{"kind", "quit"}}.dump());
  session.reset();  // collective, with the other ranks leaving serve()
}

}  // namespace volseg::session
