// SPDX-License-Identifier: MIT
// PNG output: encoded in memory, written under a temporary name, renamed.
#include <vtkImageData.h>
#include <vtkPNGWriter.h>
#include <vtkPointData.h>
#include <vtkUnsignedCharArray.h>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/render/render.hpp"
#include "volseg/version.hpp"

namespace volseg::render {

void write_png(const Image& image, const std::string& path) {
  if (image.width <= 0 || image.height <= 0) throw Error("write " + path + ": empty image");
  vtkNew<vtkImageData> data;
  data->SetDimensions(image.width, image.height, 1);
  vtkNew<vtkUnsignedCharArray> rgb;
  rgb->SetNumberOfComponents(3);
  rgb->SetNumberOfTuples(static_cast<vtkIdType>(image.width) * image.height);
  std::uint8_t* out = rgb->GetPointer(0);
  for (int y = 0; y < image.height; ++y)  // VTK's rows go up from the bottom
    for (int x = 0; x < image.width; ++x) {
      const std::uint8_t* in =
          &image.rgba[(static_cast<std::size_t>(image.height - 1 - y) * static_cast<std::size_t>(image.width) +
                       static_cast<std::size_t>(x)) *
                      4];
      *out++ = in[0];
      *out++ = in[1];
      *out++ = in[2];
    }
  data->GetPointData()->SetScalars(rgb);
  vtkNew<vtkPNGWriter> writer;
  writer->SetInputData(data);
  writer->WriteToMemoryOn();
  writer->AddText("Software", (std::string("volseg ") + version()).c_str());  // which volseg drew it
  writer->SetCompressionLevel(1);  // a third of the default's time at 1024^2, about 10% larger files
  writer->Write();
  vtkUnsignedCharArray* bytes = writer->GetResult();
  if (writer->GetErrorCode() != 0 || !bytes || bytes->GetNumberOfTuples() == 0)
    throw Error("write " + path + ": PNG encoding failed");

  io::write_file_atomically(path, bytes->GetPointer(0),
                            static_cast<std::size_t>(bytes->GetNumberOfTuples() * bytes->GetNumberOfComponents()));
}

}  // namespace volseg::render
