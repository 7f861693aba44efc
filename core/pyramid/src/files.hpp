// SPDX-License-Identifier: MIT
// Names and binary layouts of a pyramid's files (the format is described at
// the top of pyramid.cpp), and the checked file helpers build and load share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "volseg/pyramid/pyramid.hpp"

namespace volseg::pyramid::files {

constexpr int format_version = 1;
constexpr const char* format_name = "volseg-pyramid";
constexpr const char* index = "index.json";
constexpr const char* index_temporary = ".index.json.volseg-tmp-";  // io::temporary_path's, any process's
constexpr const char* bricks = "bricks.bin";
constexpr const char* histograms = "histograms.u32";
constexpr std::size_t brick_record_bytes = 32;  // f64 min, f64 max, u64 valid, u64 voxels

std::string level_header(int level);  // "level-K.nhdr"
// A file name build writes (and --force may remove): the index, its
// temporary, the binary files, level-K.nhdr / level-K.raw.
bool is_pyramid_file(const std::string& name);

// Little-endian records, whatever the host's order.
void put_brick(std::byte* out, const BrickStats& stats);
BrickStats get_brick(const std::byte* in);
std::uint32_t get_u32(const std::byte* in);
void put_u32(std::byte* out, std::uint32_t value);

// Writes a whole file (create or truncate), checking write and close.
void write_file(const std::string& path, const void* data, std::size_t size);
// Creates (or truncates) a file of `size` bytes of zeros.
void create_sized(const std::string& path, std::uint64_t size);
// Writes records of record_size bytes into an existing file, records[i] at
// places[i] * record_size (each rank its own bricks': no rank holds every
// brick's), checking every write and the close.
void write_records(const std::string& path, std::size_t record_size, const std::vector<std::int64_t>& places,
                   const std::vector<std::byte>& records);
std::string read_text(const std::string& path);
std::uint64_t file_size(const std::string& path);
// pread of exactly size bytes at offset; an early end of file is an error.
void read_at(const std::string& path, std::uint64_t offset, void* data, std::size_t size);

}  // namespace volseg::pyramid::files
