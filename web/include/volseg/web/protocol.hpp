// SPDX-License-Identifier: MIT
// The messages between the page and the job (docs/web.md, "The protocol"):
// what a page may ask, checked field by field before any rank sees it, and
// the binary frames that carry surfaces, images and slices back.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "volseg/render/render.hpp"
#include "volseg/session/requests.hpp"
#include "volseg/session/session.hpp"
#include "volseg/web/guard.hpp"

namespace volseg::web {

using Json = nlohmann::json;

// The largest message a page may send.
inline constexpr std::size_t max_message_bytes = 64 * 1024;

// A page's message, checked: `type` and `id`, and the session request it
// becomes (empty for hello and cancel). Paths are resolved under roots.
struct Message {
  std::string type;
  std::int64_t id = 0;
  std::optional<session::Request> request;  // none for hello and cancel
};

// Throws volseg::Error with one line naming the field at fault. `file` is
// the job's FILE (an open without a path reopens it).
Message parse_message(const std::string& text, const Roots& roots, const std::string& file);
// The id of a message that failed to parse, when it has one (0 otherwise),
// so the error reply can name it.
std::int64_t message_id(const std::string& text);

// A binary frame: 4 bytes of header length, the JSON header padded with
// spaces to a multiple of 4, the payload.
std::string binary_frame(const Json& header, const std::vector<const std::string*>& parts);
std::string surface_frame(const Json& header, const session::Surface& surface);
// range: the volume's values that map to bytes 0..254 (255: invalid).
std::string slices_frame(Json header, const session::Planes& planes, const std::array<double, 2>& range);
// RGBA rows from the top as a JPEG of the given quality (1..100).
std::string jpeg(const render::Image& image, int quality);

}  // namespace volseg::web
