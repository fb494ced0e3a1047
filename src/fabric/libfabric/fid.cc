#include "fabric/libfabric/fid.h"

#include "common/log.h"
#include "fabric/libfabric/fi_check.h"

namespace murmur::fabric::libfabric {

void close_fid_logged(fid_t fid, const char* what) {
  const int ret = fi_close(fid);
  if (ret != 0) fabric_log().warn("fi_close({}): {}", what, fi_error_text("fi_close", ret));
}

}  // namespace murmur::fabric::libfabric
