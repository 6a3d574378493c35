#include "src/tools/export.hpp"

#include "kernels/core/error.hpp"

namespace gmi::tools {

void run_export(const ExportOptions& o) {
  if (o.onnx.empty()) throw InputError("export: give --onnx FILE (the format to write)");
#if defined(GMI_HAVE_ONNX)
  detail::write_onnx(o);
#else
  throw InputError("export --onnx: this gmi_drl was built without ONNX (apt-get install libonnx-dev libprotobuf-dev, "
                   "then rebuild)");
#endif
}

}  // namespace gmi::tools
