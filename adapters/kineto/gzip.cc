#include "adapters/kineto/gzip.h"

#include <zlib.h>

#include <limits>

#include "events/assert.h"

namespace attune::kineto {

std::string gzip_text(std::string_view text) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip wrapper with a zeroed header (no name, no time).
  const int init = deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  ATTUNE_ASSERT(init == Z_OK, "zlib starts a deflate stream");
  ATTUNE_ASSERT(text.size() <= std::numeric_limits<uInt>::max(), "a trace is under 4 GiB");
  std::string out;
  out.resize(deflateBound(&stream, static_cast<uLong>(text.size())));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  ATTUNE_ASSERT(result == Z_STREAM_END, "deflate into a buffer of deflateBound bytes finishes");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace attune::kineto
