// Harness: load_checkpoint (peer/train/checkpoint.h) on a file's bytes.
// Input: u8 mode, then the file. Mode bit 0 rewrites the last 4 bytes as
// the CRC-32 of those before them, so that the fuzzer reaches the fields
// behind the checksum. The file loads or throws CheckpointError; what loads
// saves and loads again. The file is written to a scratch path of this
// process (TMPDIR or /tmp).
#include <unistd.h>
#include <zlib.h>

#include <string>

#include "fuzz_target.h"
#include "peer/train/checkpoint.h"
#include "scratch_file.h"

namespace train = murmur::peer::train;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const bool fix_crc = input.take<std::uint8_t>() & 1;
  std::string file = input.rest_string();
  if (fix_crc && file.size() >= 4) {
    const auto crc =
        static_cast<std::uint32_t>(::crc32_z(0L, reinterpret_cast<const Bytef*>(file.data()), file.size() - 4));
    for (int i = 0; i < 4; ++i) file[file.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  }
  const std::string path = murmur::fuzz::write_scratch_file("checkpoint", file);
  try {
    const train::Checkpoint loaded = train::load_checkpoint(path);
    if (!loaded.momentum.empty() && loaded.momentum.size() != loaded.parameters.size())
      murmur::fuzz::fail("momentum of another size than the parameters");
    train::save_checkpoint(path, loaded);
    (void)train::load_checkpoint(path);
  } catch (const train::CheckpointError&) {
  }
  ::unlink(path.c_str());
  return 0;
}
