// SPDX-License-Identifier: MIT
#include "volseg/web/server.hpp"

#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "page.hpp"
#include "volseg/io/error.hpp"
#include "volseg/session/command_line.hpp"

namespace volseg::web {
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// A WebSocket message past this closes the connection (1009) before it is
// read whole; one past max_message_bytes is read and answered with an error.
constexpr std::size_t hard_message_limit = 1 << 20;
// Frames and meshes waiting for a slow page: past this the page is dropped.
constexpr std::size_t max_queued_bytes = std::size_t{256} << 20;

// The label state without its object table, marked "table_kept".
Json without_table(const Json& labelled) {
  if (!labelled.is_object()) return labelled;
  Json out = Json::object();
  for (auto it = labelled.begin(); it != labelled.end(); ++it)
    if (it.key() != "table") out[it.key()] = it.value();
  out["table_kept"] = true;
  return out;
}

}  // namespace

// One page's WebSocket.
class WebSocketSession : public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(Server& server, std::uint64_t number, tcp::socket&& socket)
      : server_(server), number_(number), ws_(std::move(socket)) {}

  std::uint64_t number() const { return number_; }

  void start(http::request<http::string_body> request) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(hard_message_limit);
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code error) {
      if (!error) self->read();
    });
  }

  void send(std::shared_ptr<const std::string> data, bool binary) {
    queued_bytes_ += data->size();
    if (queued_bytes_ > max_queued_bytes) {  // a page that reads nothing
      beast::get_lowest_layer(ws_).close();
      return;
    }
    queue_.push_back({std::move(data), binary});
    if (queue_.size() == 1) write();
  }

 private:
  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (error) return;  // closed: the session goes on without this page
      const std::string text = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      if (!self->ws_.got_text()) {
        self->server_.error_to(self->number_, 0, "", "binary messages are not understood");
      } else {
        self->server_.handle_message(self, text);
      }
      self->read();
    });
  }

  void write() {
    auto& [data, binary] = queue_.front();
    ws_.binary(binary);
    ws_.async_write(net::buffer(*data), [self = shared_from_this()](beast::error_code error, std::size_t) {
      self->queued_bytes_ -= self->queue_.front().first->size();
      self->queue_.pop_front();
      if (error) {
        self->queue_.clear();
        return;
      }
      if (!self->queue_.empty()) self->write();
    });
  }

  Server& server_;
  std::uint64_t number_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::deque<std::pair<std::shared_ptr<const std::string>, bool>> queue_;
  std::size_t queued_bytes_ = 0;
};

// One HTTP connection: the page's files, or the upgrade to its WebSocket.
struct Server::Http : std::enable_shared_from_this<Server::Http> {
  Http(Server& server, tcp::socket&& socket) : server(server), stream(std::move(socket)) {}

  void read() {
    parser.emplace();
    parser->header_limit(8 * 1024);
    parser->body_limit(4 * 1024);
    stream.expires_after(std::chrono::seconds(30));
    http::async_read(stream, buffer, *parser, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (error) return;  // closed, timed out or malformed: nothing to answer
      self->handle(self->parser->release());
    });
  }

  void handle(http::request<http::string_body> request);
  http::response<http::string_body> respond(const http::request<http::string_body>& request);
  bool authorised(const http::request<http::string_body>& request, bool& by_query) const;

  void reply(http::response<http::string_body> response) {
    auto shared = std::make_shared<http::response<http::string_body>>(std::move(response));
    http::async_write(stream, *shared, [self = shared_from_this(), shared](beast::error_code error, std::size_t) {
      if (error || !shared->keep_alive()) {
        beast::error_code ignored;
        self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      self->read();
    });
  }

  Server& server;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
};

namespace {

http::response<http::string_body> text_response(const http::request<http::string_body>& request, http::status status,
                                                std::string body) {
  http::response<http::string_body> response{status, request.version()};
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.set(http::field::cache_control, "no-store");
  response.body() = std::move(body) + "\n";
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  return response;
}

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

// The path and query of a request target.
std::pair<std::string, std::string> split_target(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return {std::string(target), {}};
  return {std::string(target.substr(0, q)), std::string(target.substr(q + 1))};
}

}  // namespace

bool Server::Http::authorised(const http::request<http::string_body>& request, bool& by_query) const {
  by_query = false;
  const std::string& token = server.options_.token;
  if (token.empty()) return true;
  const auto [path, query] = split_target(view(request.target()));
  if (const auto q = query_value(query, "token"); q && same_secret(*q, token)) {
    by_query = true;
    return true;
  }
  const auto cookie_name = "volseg-web-" + std::to_string(server.port_);
  for (auto it = request.find(http::field::cookie); it != request.end() && it->name() == http::field::cookie; ++it)
    if (const auto c = cookie_value(view(it->value()), cookie_name); c && same_secret(*c, token)) return true;
  if (const auto a = request.find(http::field::authorization); a != request.end()) {
    const std::string_view value = view(a->value());
    if (value.substr(0, 6) == "token " && same_secret(value.substr(6), token)) return true;
  }
  return false;
}

void Server::Http::handle(http::request<http::string_body> request) {
  const auto [path, query] = split_target(view(request.target()));
  const std::string& base = server.options_.base_url;
  if (websocket::is_upgrade(request) && path == base + "ws") {
    bool by_query = false;
    if (!authorised(request, by_query))
      return reply(text_response(request, http::status::unauthorized, "volseg web: the token is missing or wrong"));
    const auto origin = request.find(http::field::origin);
    const auto host = request.find(http::field::host);
    if (!origin_allowed(origin == request.end() ? "" : view(origin->value()),
                        host == request.end() ? "" : view(host->value()), server.options_.allow_origins))
      return reply(text_response(request, http::status::forbidden,
                                 "volseg web: a page from another origin may not connect (--allow-origin)"));
    if (server.sockets_.size() >= server.options_.max_connections)
      return reply(text_response(request, http::status::service_unavailable, "volseg web: too many pages open"));
    stream.expires_never();
    const std::uint64_t number = server.next_connection_++;
    auto socket = std::make_shared<WebSocketSession>(server, number, stream.release_socket());
    server.sockets_[number] = socket;
    socket->start(std::move(request));
    return;
  }
  reply(respond(request));
}

http::response<http::string_body> Server::Http::respond(const http::request<http::string_body>& request) {
  if (request.method() != http::verb::get && request.method() != http::verb::head)
    return text_response(request, http::status::method_not_allowed, "volseg web: only GET");
  const auto [path, query] = split_target(view(request.target()));
  const std::string& base = server.options_.base_url;
  if (path.compare(0, base.size(), base) != 0 && path + "/" != base)
    return text_response(request, http::status::not_found, "volseg web: not found");
  bool by_query = false;
  if (!authorised(request, by_query))
    return text_response(
        request, http::status::unauthorized,
        "volseg web: a token is needed: open the address `volseg web` printed (it ends in ?token=...)");
  std::string name = path.size() > base.size() ? path.substr(base.size()) : std::string();
  if (name.empty() || path + "/" == base) name = "index.html";
  if (by_query && name == "index.html") {
    // The token becomes a cookie, and leaves the address bar and the history.
    http::response<http::string_body> response{http::status::found, request.version()};
    response.set(http::field::location, base);
    response.set(http::field::set_cookie, "volseg-web-" + std::to_string(server.port_) + "=" + server.options_.token +
                                              "; Path=" + base + "; HttpOnly; SameSite=Strict");
    response.set(http::field::cache_control, "no-store");
    response.set("Referrer-Policy", "no-referrer");
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    return response;
  }
  if (name == "journal.json") {  // the edit journal, for `volseg edit LABELS --edits journal.json`
    const std::string journal =
        server.labels_.labelled_yet() ? server.labels_.labelled().value("journal", std::string()) : "";
    std::ifstream in(journal, std::ios::binary);
    std::ostringstream all;
    if (journal.empty() || !in || !(all << in.rdbuf()))
      return text_response(request, http::status::not_found, "volseg web: no edits yet: there is no journal");
    http::response<http::string_body> response{http::status::ok, request.version()};
    response.set(http::field::content_type, "application/json");
    response.set(http::field::content_disposition,
                 "attachment; filename=\"" + std::filesystem::path(journal).filename().string() + "\"");
    response.set(http::field::cache_control, "no-store");
    response.set("X-Content-Type-Options", "nosniff");
    if (request.method() == http::verb::get) response.body() = all.str();
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    return response;
  }
  if (name == "favicon.ico") {  // none: say so without an error in the browser's console
    http::response<http::string_body> none{http::status::no_content, request.version()};
    none.keep_alive(request.keep_alive());
    none.prepare_payload();
    return none;
  }
  std::string content, type;
  if (!server.options_.page_dir.empty() && name.find('/') == std::string::npos && name[0] != '.') {
    std::ifstream in(server.options_.page_dir + "/" + name, std::ios::binary);
    std::ostringstream all;
    const auto dot = name.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : name.substr(dot);
    if (in && (all << in.rdbuf())) {
      content = all.str();
      type = ext == ".html"  ? "text/html; charset=utf-8"
             : ext == ".js"  ? "text/javascript; charset=utf-8"
             : ext == ".css" ? "text/css; charset=utf-8"
                             : "application/octet-stream";
    }
  }
  if (type.empty()) {
    const PageFile* file = page_file(name);
    if (file == nullptr) return text_response(request, http::status::not_found, "volseg web: not found");
    content = std::string(file->content);
    type = std::string(file->type);
  }
  http::response<http::string_body> response{http::status::ok, request.version()};
  response.set(http::field::content_type, type);
  response.set(http::field::cache_control, "no-store");
  response.set("X-Content-Type-Options", "nosniff");
  response.set("Referrer-Policy", "no-referrer");
  response.set("Content-Security-Policy",
               "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' blob: data:; "
               "style-src 'self'; script-src 'self'; frame-ancestors 'self'");
  if (request.method() == http::verb::get) response.body() = std::move(content);
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  return response;
}

struct Server::Listener {
  explicit Listener(net::io_context& io) : acceptor(io) {}
  tcp::acceptor acceptor;
};

Server::Server(ServerOptions options)
    : options_(std::move(options)), roots_(options_.roots), listener_(std::make_unique<Listener>(io_)) {
  if (options_.base_url.empty() || options_.base_url.front() != '/') options_.base_url = "/" + options_.base_url;
  if (options_.base_url.back() != '/') options_.base_url += '/';
  beast::error_code error;
  const auto address = net::ip::make_address(options_.host, error);
  if (error) throw Error("web: --host " + options_.host + " is not an IP address of this host (e.g. 127.0.0.1)");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
  auto& a = listener_->acceptor;
  a.open(endpoint.protocol(), error);
  if (!error) a.set_option(net::socket_base::reuse_address(true), error);
  if (!error) a.bind(endpoint, error);
  if (!error) a.listen(net::socket_base::max_listen_connections, error);
  if (!error) {
    port_ = a.local_endpoint().port();
    return;
  }
  throw Error("web: cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + error.message() +
              (error == net::error::address_in_use ? " (--port to choose another, or --port 0 for any free one)" : ""));
}

Server::~Server() = default;

std::string Server::url() const {
  std::string host = options_.host;
  if (host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  std::string url = "http://" + host + ":" + std::to_string(port_) + options_.base_url;
  if (!options_.token.empty()) url += "?token=" + options_.token;
  return url;
}

void Server::accept() {
  listener_->acceptor.async_accept(net::make_strand(io_), [this](beast::error_code error, tcp::socket socket) {
    if (!error) std::make_shared<Http>(*this, std::move(socket))->read();
    if (listener_->acceptor.is_open()) accept();
  });
}

void Server::on_reply(std::shared_ptr<session::Reply> reply) {
  if (first_open_) {  // before serving: run() has not started the loop
    auto promise = std::move(*first_open_);
    first_open_.reset();
    handle_reply(reply);
    promise.set_value(reply->error);
    return;
  }
  net::post(io_, [this, reply] { handle_reply(reply); });
}

void Server::on_progress(const std::vector<std::int64_t>& units, std::int64_t total, bool final) {
  net::post(io_, [this, units, total, final] {
    broadcast({{"type", "progress"},
               {"request", busy_.is_null() ? Json("") : busy_.at("request")},
               {"units", units},
               {"total", total},
               {"final", final}});
  });
}

std::string Server::open_first(session::Worker& worker, const session::OpenRequest& request) {
  worker_ = &worker;
  first_open_.emplace();
  auto done = first_open_->get_future();
  busy_ = {{"request", "open"}, {"id", 0}};
  job_ = request;
  worker.post(request, {{"connection", 0}, {"id", 0}, {"type", "open"}});
  return done.get();
}

void Server::run(session::Worker& worker) {
  worker_ = &worker;
  net::signal_set signals(io_, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([this](beast::error_code, int) {
    beast::error_code ignored;
    listener_->acceptor.close(ignored);
    io_.stop();
  });
  accept();
  io_.run();
}

Json Server::state(bool with_table) const {
  Json command = Json::array();
  if (opened_ && segmented_) command.push_back(session::segment_command_line(*opened_, *segmented_));
  if (segmented_ && labelled_) command.push_back(session::label_command_line(*segmented_, *labelled_));
  if (labelled_ && !edit_command_.empty()) command.push_back(edit_command_);
  Json roots = Json::array();
  for (const auto& r : roots_.folders()) roots.push_back(r.string());
  return {{"type", "state"},
          {"state",
           {{"file", options_.file},
            {"roots", roots},
            {"ranks", options_.ranks},
            {"busy", busy_},
            {"open", open_},
            {"segment", segment_},
            {"label", with_table ? labels_.labelled() : without_table(labels_.labelled())},
            {"last_error", last_error_},
            {"command", command}}}};
}

void Server::broadcast_state() {
  broadcast(state(table_broadcast_ != table_version_));
  table_broadcast_ = table_version_;
}

void Server::send_to(std::uint64_t connection, std::shared_ptr<const std::string> data, bool binary) {
  const auto it = sockets_.find(connection);
  if (it == sockets_.end()) return;
  if (auto socket = it->second.lock())
    socket->send(std::move(data), binary);
  else
    sockets_.erase(it);
}

void Server::broadcast(const Json& message) {
  const auto data = std::make_shared<const std::string>(message.dump(-1, ' ', false, Json::error_handler_t::replace));
  for (auto it = sockets_.begin(); it != sockets_.end();) {
    if (auto socket = it->second.lock()) {
      socket->send(data, false);
      ++it;
    } else {
      it = sockets_.erase(it);
    }
  }
}

void Server::error_to(std::uint64_t connection, std::int64_t id, const std::string& type, const std::string& message) {
  const Json e{{"type", "error"}, {"id", id}, {"request", type}, {"message", message}};
  send_to(connection, std::make_shared<const std::string>(e.dump(-1, ' ', false, Json::error_handler_t::replace)),
          false);
}

void Server::handle_message(const std::shared_ptr<WebSocketSession>& from, const std::string& text) {
  Message message;
  try {
    message = parse_message(text, roots_, options_.file);
  } catch (const std::exception& e) {
    error_to(from->number(), message_id(text), "", e.what());
    return;
  }
  const std::string& type = message.type;
  if (type == "hello") {
    Json s = state();
    s["id"] = message.id;
    send_to(from->number(), std::make_shared<const std::string>(s.dump()), false);
    return;
  }
  if (type == "cancel") {
    // Requests dropped before they ran are answered as a cancelled job is.
    for (auto& dropped : worker_->cancel()) {
      auto reply = std::make_shared<session::Reply>();
      reply->kind = std::string(session::kind_of(dropped.request).name);
      reply->error = Cancelled::message;
      reply->cancelled = true;
      reply->tag = std::move(dropped.tag);
      handle_reply(reply);
    }
    return;
  }
  const session::Kind& kind = session::kind_of(*message.request);
  const bool job = kind.job;
  if (job && !busy_.is_null()) {
    error_to(from->number(), message.id, type,
             "busy: " + busy_.at("request").get<std::string>() + " is running (cancel it or wait)");
    return;
  }
  Json tag{{"connection", from->number()}, {"id", message.id}, {"type", type}};
  // A page's newer frame (or slices) replaces its own older one still queued:
  // a turning view asks faster than frames come.
  std::string replaces = kind.replaceable ? type + "-" + std::to_string(from->number()) : "";
  if (job) {
    busy_ = {{"request", type}, {"id", message.id}};
    job_ = *message.request;
    broadcast_state();
  }
  worker_->post(std::move(*message.request), std::move(tag), std::move(replaces));
}

void Server::handle_reply(const std::shared_ptr<session::Reply>& reply) {
  const Json tag = reply->tag.is_object() ? reply->tag : Json::object();
  const auto connection = tag.value("connection", std::uint64_t{0});
  const auto id = tag.value("id", std::int64_t{0});
  const std::string type = tag.value("type", reply->kind);
  const session::Kind* kind = session::kind_of_page_type(type);
  const bool job = kind != nullptr && kind->job;
  if (job) busy_ = nullptr;
  if (!reply->error.empty()) {
    error_to(connection, id, type, reply->error);
    if (job) {
      last_error_ = {{"request", type}, {"message", reply->error}};
      broadcast_state();
    }
    return;
  }
  try {
    if (job) {
      last_error_ = nullptr;
      if (type == "open") {
        open_ = reply->data;
        if (open_.contains("range")) range_ = {open_["range"][0].get<double>(), open_["range"][1].get<double>()};
        opened_ = reply->opened;
        segment_ = nullptr;
        labels_.clear();
        ++table_version_;
        segmented_.reset();
        labelled_.reset();
        edit_command_.clear();
      } else if (type == "segment") {
        segment_ = reply->data;
        if (job_) segmented_ = std::get<session::SegmentRequest>(*job_);
        labels_.clear();
        ++table_version_;
        labelled_.reset();
        edit_command_.clear();
      } else if (type == "split" || type == "edit") {
        // The table every page sees follows the edit; the command list
        // gains the `volseg edit` that redoes the journal.
        if (type == "edit" || reply->data.value("applied", false))
          edit_command_ = reply->data.value("command", std::string());
        labels_.apply(type, reply->data);
        ++table_version_;
      } else {
        labels_.reset(reply->data);
        ++table_version_;
        if (job_) labelled_ = std::get<session::LabelRequest>(*job_);
        edit_command_.clear();
      }
      const Json r{{"type", "reply"}, {"id", id}, {"request", type}, {"data", reply->data}};
      send_to(connection, std::make_shared<const std::string>(r.dump()), false);
      broadcast_state();
      return;
    }
    const Json header{{"type", type}, {"id", id}};
    if (type == "surface" && reply->surface) {
      send_to(connection, std::make_shared<const std::string>(surface_frame(header, *reply->surface)), true);
    } else if (type == "frame") {
      Json h = header;
      h["width"] = reply->image.width;
      h["height"] = reply->image.height;
      h["level"] = reply->data.value("level", 0);
      h["seconds"] = reply->seconds;
      const std::string image = jpeg(reply->image, 85);
      send_to(connection, std::make_shared<const std::string>(binary_frame(h, {&image})), true);
    } else if (type == "slices" && reply->planes) {
      send_to(connection, std::make_shared<const std::string>(slices_frame(header, *reply->planes, range_)), true);
    } else {
      error_to(connection, id, type, "the job gave no " + type);
    }
  } catch (const std::exception& e) {
    error_to(connection, id, type, e.what());
  }
}

}  // namespace volseg::web
