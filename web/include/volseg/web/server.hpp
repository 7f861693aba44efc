// SPDX-License-Identifier: MIT
// Rank 0's web server: the page's files and its WebSocket (Boost.Beast, one
// thread), in front of the session's worker (volseg::session::Worker), which
// broadcasts each request to every rank. The session is one, shared by every
// page that has the token: its state goes to all of them whenever it changes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/session/edit_history.hpp"
#include "volseg/session/worker.hpp"
#include "volseg/web/guard.hpp"
#include "volseg/web/protocol.hpp"

namespace volseg::web {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8765;                         // 0: any free port
  std::string token;                       // empty: no token (loopback only)
  std::string base_url = "/";              // a prefix a proxy leaves in the path
  std::vector<std::string> allow_origins;  // besides the same origin
  std::string file;                        // the job's FILE
  std::vector<std::string> roots;          // folders files may be opened and written under
  std::string page_dir;                    // non-empty: serve the page from here (development)
  int ranks = 1;
  std::size_t max_connections = 32;
};

class WebSocketSession;

class Server {
 public:
  // Listens at once; throws volseg::Error with one line when it cannot
  // (a port in use, an address this host does not have).
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  // The job's FILE, as resolved (an open without a path opens it).
  void set_file(std::string file) { options_.file = std::move(file); }
  // The address to open, with the token: http://HOST:PORT/BASE?token=T.
  std::string url() const;

  // The worker's callbacks (they run on its thread).
  void on_reply(std::shared_ptr<session::Reply> reply);
  void on_progress(const std::vector<std::int64_t>& units, std::int64_t total, bool final);

  // Opens the job's FILE before any page connects; returns the error, or
  // an empty string.
  std::string open_first(session::Worker& worker, const session::OpenRequest& request);
  // Serves until SIGINT, SIGTERM or SIGHUP.
  void run(session::Worker& worker);

  // For the connections.
  struct Http;
  friend class WebSocketSession;
  friend struct Http;

 private:
  void accept();
  void handle_message(const std::shared_ptr<WebSocketSession>& from, const std::string& text);
  void handle_reply(const std::shared_ptr<session::Reply>& reply);
  void send_to(std::uint64_t connection, std::shared_ptr<const std::string> data, bool binary);
  void broadcast(const Json& message);
  // The session as every page sees it. Without with_table, the labels'
  // object table is left out ("table_kept": the page keeps the one it
  // has): the busy and error broadcasts, and those after requests that
  // did not change it, stay small however many objects there are.
  Json state(bool with_table = true) const;
  // Broadcasts the state, with the table only when it changed since the last.
  void broadcast_state();
  void error_to(std::uint64_t connection, std::int64_t id, const std::string& type, const std::string& message);

  ServerOptions options_;
  Roots roots_;
  boost::asio::io_context io_;
  struct Listener;
  std::unique_ptr<Listener> listener_;
  int port_ = 0;
  session::Worker* worker_ = nullptr;
  std::map<std::uint64_t, std::weak_ptr<WebSocketSession>> sockets_;
  std::uint64_t next_connection_ = 1;
  std::optional<std::promise<std::string>> first_open_;
  // the shared session
  Json open_, segment_, busy_, last_error_;                // the replies the page's state shows
  session::EditHistory labels_;                            // the label reply, followed through the edits
  std::uint64_t table_version_ = 0, table_broadcast_ = 0;  // labels_'s changes, and the last one broadcast
  // The job running, and the requests of the last open, segment and label
  // that succeeded: the command lines that redo them.
  std::optional<session::Request> job_;
  std::optional<session::OpenRequest> opened_;
  std::optional<session::SegmentRequest> segmented_;
  std::optional<session::LabelRequest> labelled_;
  std::string edit_command_;  // `volseg edit` of the splits applied to the labels, once there are any
  std::array<double, 2> range_{0, 1};
};

}  // namespace volseg::web
