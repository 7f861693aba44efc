// SPDX-License-Identifier: MIT
#include "movie.hpp"

#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkPNGReader.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <array>
#include <filesystem>
#include <memory>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"

namespace volseg::render {
namespace fs = std::filesystem;

namespace {

std::string av_error(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

// One line naming the movie and the step that failed.
int checked(int code, const std::string& movie, const char* what) {
  if (code < 0) throw Error("--movie " + movie + ": " + what + ": " + av_error(code));
  return code;
}

struct FreeContext {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FreeFrame {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct FreePacket {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FreeScaler {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
// The output: its file closed (and the close checked) by finish(), or
// closed unchecked when an error unwinds past it.
struct Output {
  AVFormatContext* format = nullptr;
  ~Output() {
    if (format == nullptr) return;
    if (format->pb != nullptr) avio_closep(&format->pb);
    avformat_free_context(format);
  }
};

bool is_h264_container(const std::string& extension) {
  return extension == ".mp4" || extension == ".mov" || extension == ".mkv";
}

// Sends one frame (nullptr: the end) and writes every packet it yields.
void drain(AVCodecContext* codec, AVFrame* frame, AVFormatContext* format, AVStream* stream, AVPacket* packet,
           const std::string& movie) {
  checked(avcodec_send_frame(codec, frame), movie, "encoding a frame");
  for (;;) {
    const int got = avcodec_receive_packet(codec, packet);
    if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
    checked(got, movie, "encoding a frame");
    av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
    packet->stream_index = stream->index;
    checked(av_interleaved_write_frame(format, packet), movie, "writing a frame");
  }
}

void write_movie(const std::vector<std::string>& frames, const std::string& movie, const std::string& temp, int rate) {
  const std::string extension = fs::path(movie).extension().string();
  const AVOutputFormat* container = av_guess_format(nullptr, movie.c_str(), nullptr);
  if (container == nullptr) throw Error("--movie " + movie + ": FFmpeg has no container for " + extension);
  const AVCodec* encoder = is_h264_container(extension) ? avcodec_find_encoder(AV_CODEC_ID_H264) : nullptr;
  if (encoder == nullptr) encoder = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (encoder == nullptr) throw Error("--movie " + movie + ": FFmpeg has neither an H.264 nor an MPEG-4 encoder");

  vtkNew<vtkPNGReader> reader;
  auto read = [&](const std::string& frame) -> vtkImageData* {
    reader->SetFileName(frame.c_str());
    reader->Update();
    vtkImageData* image = reader->GetOutput();
    if (reader->GetErrorCode() != 0 || image == nullptr || image->GetScalarType() != VTK_UNSIGNED_CHAR ||
        (image->GetNumberOfScalarComponents() != 3 && image->GetNumberOfScalarComponents() != 4))
      throw Error("--movie: cannot read the frame " + frame + " (an 8-bit RGB or RGBA PNG)");
    return image;
  };
  int dims[3];
  read(frames.front())->GetDimensions(dims);
  const int width = dims[0], height = dims[1];
  // 4:2:0 video takes even sizes: an odd last column or row is left out.
  const int video_width = width & ~1, video_height = height & ~1;
  if (video_width < 2 || video_height < 2)
    throw Error("--movie: frames of " + std::to_string(width) + "x" + std::to_string(height) +
                " are too small for video");

  Output output;
  checked(avformat_alloc_output_context2(&output.format, container, nullptr, temp.c_str()), movie,
          "starting the container");
  AVStream* stream = avformat_new_stream(output.format, nullptr);
  if (stream == nullptr) throw Error("--movie " + movie + ": cannot add a video stream");
  std::unique_ptr<AVCodecContext, FreeContext> codec(avcodec_alloc_context3(encoder));
  if (!codec) throw std::bad_alloc();
  codec->width = video_width;
  codec->height = video_height;
  codec->time_base = AVRational{1, rate};
  codec->framerate = AVRational{rate, 1};
  codec->pix_fmt = AV_PIX_FMT_YUV420P;
  codec->gop_size = 12;
  if (encoder->id == AV_CODEC_ID_H264) {
    av_opt_set(codec->priv_data, "preset", "medium", 0);
    av_opt_set(codec->priv_data, "crf", "18", 0);  // visually lossless for rendered frames
  } else {
    codec->flags |= AV_CODEC_FLAG_QSCALE;  // MPEG-4: a fixed quantiser, 2 = near lossless
    codec->global_quality = FF_QP2LAMBDA * 2;
  }
  if (output.format->oformat->flags & AVFMT_GLOBALHEADER) codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  checked(avcodec_open2(codec.get(), encoder, nullptr), movie, "opening the encoder");
  checked(avcodec_parameters_from_context(stream->codecpar, codec.get()), movie, "describing the stream");
  stream->time_base = codec->time_base;
  stream->avg_frame_rate = codec->framerate;
  checked(avio_open(&output.format->pb, temp.c_str(), AVIO_FLAG_WRITE), movie, "creating the file");
  checked(avformat_write_header(output.format, nullptr), movie, "writing the header");

  std::unique_ptr<AVFrame, FreeFrame> picture(av_frame_alloc());
  std::unique_ptr<AVPacket, FreePacket> packet(av_packet_alloc());
  if (!picture || !packet) throw std::bad_alloc();
  picture->format = codec->pix_fmt;
  picture->width = video_width;
  picture->height = video_height;
  checked(av_frame_get_buffer(picture.get(), 0), movie, "allocating a frame");
  std::unique_ptr<SwsContext, FreeScaler> scaler;
  int components = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    vtkImageData* image = read(frames[i]);
    image->GetDimensions(dims);
    if (dims[0] != width || dims[1] != height)
      throw Error("--movie: the frame " + frames[i] + " is " + std::to_string(dims[0]) + "x" + std::to_string(dims[1]) +
                  ", the first " + std::to_string(width) + "x" + std::to_string(height));
    if (image->GetNumberOfScalarComponents() != components || !scaler) {
      components = image->GetNumberOfScalarComponents();
      scaler.reset(sws_getContext(video_width, video_height, components == 4 ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24,
                                  video_width, video_height, AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr,
                                  nullptr));
      if (!scaler) throw Error("--movie " + movie + ": no conversion from RGB to YUV 4:2:0");
    }
    checked(av_frame_make_writable(picture.get()), movie, "reusing a frame");
    // VTK's rows go up from the bottom: the top row first, with a negative stride.
    const auto* pixels = static_cast<const std::uint8_t*>(image->GetScalarPointer());
    const int stride = width * components;
    const std::uint8_t* rows[4] = {pixels + static_cast<std::ptrdiff_t>(height - 1) * stride, nullptr, nullptr,
                                   nullptr};
    const int strides[4] = {-stride, 0, 0, 0};
    sws_scale(scaler.get(), rows, strides, 0, video_height, picture->data, picture->linesize);
    picture->pts = static_cast<std::int64_t>(i);
    drain(codec.get(), picture.get(), output.format, stream, packet.get(), movie);
  }
  drain(codec.get(), nullptr, output.format, stream, packet.get(), movie);
  checked(av_write_trailer(output.format), movie, "finishing the container");
  checked(avio_closep(&output.format->pb), movie, "closing the file");
}

}  // namespace

const char* movie_containers() { return ".mp4, .mov, .mkv (H.264) or .avi (MPEG-4)"; }

void check_movie_name(const std::string& path) {
  const std::string extension = fs::path(path).extension().string();
  if (!is_h264_container(extension) && extension != ".avi")
    throw Error("--movie " + path + ": name it NAME.mp4, NAME.mov, NAME.mkv (H.264) or NAME.avi (MPEG-4)");
}

void encode_movie(const std::vector<std::string>& frames, const std::string& movie, int rate) {
  if (frames.empty()) throw Error("--movie " + movie + ": no frames to encode");
  if (rate < 1) throw Error("--fps must be at least 1, not " + std::to_string(rate));
  check_movie_name(movie);
  av_log_set_level(AV_LOG_ERROR);  // no notes about pixel formats or x264's settings; errors still print
  io::AtomicCommit commit(movie, io::temporary_path(movie));  // destroyed uncommitted, it removes the temporary
  write_movie(frames, movie, commit.temporary(), rate);
  std::error_code ec;
  if (fs::file_size(commit.temporary(), ec) == 0 || ec) throw Error("--movie " + movie + ": no file was written");
  commit.commit(true);
}

}  // namespace volseg::render
