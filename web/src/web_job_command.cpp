// SPDX-License-Identifier: MIT
// `volseg web FILE`: every rank joins the session; rank 0 also serves the
// page. The checks that decide whether anyone else could get in come first,
// on every rank alike, so a refused job ends everywhere with one line.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/render/render.hpp"
#include "volseg/session/transport.hpp"
#include "volseg/session/worker.hpp"
#include "volseg/web/server.hpp"

namespace volseg::web {
namespace {

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "::1" || host == "localhost"; }

class WebJobCommand final : public cli::Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub =
        app.add_subcommand("web", "Serve a browser page that drives this job: histogram, segment, label, 3D view");
    sub->footer(
        "Rank 0 prints one line, the address to open (with its secret token). The server listens on 127.0.0.1:\n"
        "reach it through an ssh tunnel, a Jupyter proxy or Open OnDemand (docs/web.md).");
    sub->add_option("input", file_, cli::input_help)->required();
    sub->add_option("--var", variable_, "Variable of a file of several (the page can pick another)");
    sub->add_option("--time", time_, "Time step of a series (the page can pick another)");
    auto* expr = sub->add_option("--expr", expression_, "A field computed from the file's variables (as segment's)");
    sub->add_option("--where", condition_, "A condition of the file's variables (as segment's)")->excludes(expr);
    sub->add_option("--host", options_.host, "Address to listen on")->capture_default_str();
    sub->add_option("--port", options_.port, "Port to listen on; 0: any free one")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    sub->add_option("--token", options_.token,
                    "The secret in the address (default: $VOLSEG_WEB_TOKEN, else 48 random hex digits)");
    sub->add_flag("--no-token", no_token_, "No token: anyone who can reach the port gets in (loopback only)");
    sub->add_option("--root", options_.roots,
                    "Folder the page may open and write files under (repeatable; default: FILE's folder)");
    sub->add_option("--base-url", options_.base_url, "Path prefix a proxy leaves in requests")->capture_default_str();
    sub->add_option("--allow-origin", options_.allow_origins,
                    "An origin (scheme://host:port) whose pages may connect besides the server's own; * for any");
    sub->add_option("--print-url-file", url_file_, "Also write the address line to this file (for launchers)");
    return sub;
  }

  void run(const cli::Context& context) override;

 private:
  void check_options();

  std::string file_, variable_, expression_, condition_, url_file_;
  std::optional<std::int64_t> time_;
  bool no_token_ = false;
  ServerOptions options_;
};

void WebJobCommand::check_options() {
  if (no_token_ && !options_.token.empty()) throw Error("web: --token and --no-token together");
  if (!no_token_ && options_.token.empty()) {
    const char* env = std::getenv("VOLSEG_WEB_TOKEN");
    if (env && *env) options_.token = env;
  }
  if (no_token_ && !loopback(options_.host))
    throw Error("web: --host " + options_.host +
                " without a token would let anyone who reaches this node in: drop --no-token (or listen on "
                "127.0.0.1)");
  if (!no_token_ && !options_.token.empty() && options_.token.size() < 16)
    throw Error("web: the token must have at least 16 characters");
  for (const char c : options_.token)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      throw Error("web: the token may hold letters, digits, '-' and '_' only");
  if (time_ && *time_ < 0) throw Error("web: --time must be a step number, 0 or more");
  if (options_.roots.empty()) {
    const std::filesystem::path folder = std::filesystem::path(file_).parent_path();
    options_.roots.push_back(folder.empty() ? "." : folder.string());
  }
}

void WebJobCommand::run(const cli::Context& context) {
  const Comm& comm = context.comm;
  check_options();
  session::OpenRequest first;
  first.selection.variable = variable_;
  first.selection.step = time_;
  first.selection.expression = condition_.empty() ? expression_ : condition_;
  first.selection.condition = !condition_.empty();
  std::unique_ptr<Server> server;
  collectively(comm, [&] {
    render::check_display(comm);  // frames need a display on every rank: say so now
    if (comm.rank() != 0) return;
    if (!no_token_ && options_.token.empty()) options_.token = new_token();
    options_.ranks = comm.size();
    if (const char* dir = std::getenv("VOLSEG_WEB_PAGE_DIR")) options_.page_dir = dir;
    server = std::make_unique<Server>(options_);
    first.path = Roots(options_.roots).input(file_).string();
    server->set_file(first.path);
  });
  Comm session_comm = comm.duplicate();
  if (comm.rank() != 0) {
    session::serve(session_comm);
    // The job failed to open its FILE: rank 0 says why; fail here too.
    if (comm.broadcast(std::string()) == "failed") throw Error("web: the job ended");
    return;
  }
  std::string failure;
  {
    session::Worker worker(
        std::move(session_comm), [&](std::shared_ptr<session::Reply> reply) { server->on_reply(std::move(reply)); },
        [&](const std::vector<std::int64_t>& units, std::int64_t total, bool final) {
          server->on_progress(units, total, final);
        });
    try {
      failure = server->open_first(worker, first);
      if (failure.empty()) {
        const std::string line = "volseg web: " + server->url();
        if (!url_file_.empty()) io::write_file_atomically(url_file_, line + "\n");
        std::printf("%s\nvolseg web: %s\n", line.c_str(), render::display_way().c_str());
        std::fflush(stdout);
        server->run(worker);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }  // the worker quits: every rank leaves serve()
  comm.broadcast(std::string(failure.empty() ? "done" : "failed"));
  if (!failure.empty()) throw Error(failure);
}

}  // namespace

std::unique_ptr<cli::Command> make_web_job_command() { return std::make_unique<WebJobCommand>(); }

}  // namespace volseg::web
