// SPDX-License-Identifier: MIT
// Frames (PNG files, one size) into a movie with FFmpeg's libraries
// (libavformat, libavcodec, libswscale): H.264 in MP4, MOV or MKV when the
// library has an H.264 encoder (Debian's links x264), MPEG-4 Part 2
// otherwise and in AVI. Private to volseg_render.
#pragma once

#include <string>
#include <vector>

namespace volseg::render {

// The containers movie names may end with, for messages: ".mp4, .mov, .mkv or .avi".
const char* movie_containers();
// Throws unless path ends with one of them.
void check_movie_name(const std::string& path);
// Writes path under a temporary name, renamed when the file is complete;
// on an error no file is left. rate: frames per second.
void encode_movie(const std::vector<std::string>& frames, const std::string& path, int rate);

}  // namespace volseg::render
