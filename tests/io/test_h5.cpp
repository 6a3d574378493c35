// The HDF5 handle (src/io/h5.hpp): it closes its identifier, except while a failed collective
// write unwinds with several ranks (CollectiveWriteScope), where the closes would wait for ranks
// that never reach them.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "src/io/h5.hpp"

namespace {

namespace fs = std::filesystem;

std::string temp_file(const char* name) { return (fs::temp_directory_path() / name).string(); }

/// The identifier of a file created in a block that throws (inside `scope_ranks`' scope when > 0).
hid_t file_left_by_a_throw(int scope_ranks, const std::string& path) {
  hid_t id = H5I_INVALID_HID;
  try {
    auto body = [&] {
      gmi::io::H5Handle f = gmi::io::create_file(path);
      id = f.get();
      throw std::runtime_error("the write failed");
    };
    if (scope_ranks > 0) {
      const gmi::io::CollectiveWriteScope scope(scope_ranks);
      body();
    } else {
      body();
    }
  } catch (const std::runtime_error&) {
  }
  return id;
}

TEST(H5Handle, ClosesItsIdentifier) {
  const std::string path = temp_file("gmi_test_h5_close.h5");
  hid_t id;
  {
    gmi::io::H5Handle f = gmi::io::create_file(path);
    id = f.get();
    EXPECT_GT(H5Iis_valid(id), 0);
  }
  EXPECT_LE(H5Iis_valid(id), 0);
  fs::remove(path);
}

TEST(H5Handle, AbandonedOnlyWhileACollectiveWriteOfSeveralRanksUnwinds) {
  const std::string path = temp_file("gmi_test_h5_abandon.h5");
  for (int ranks : {0, 1}) {  // no scope, or a scope of one rank: closed as usual
    const hid_t id = file_left_by_a_throw(ranks, path);
    EXPECT_LE(H5Iis_valid(id), 0) << "scope ranks " << ranks;
  }
  const hid_t id = file_left_by_a_throw(2, path);
  EXPECT_GT(H5Iis_valid(id), 0) << "several ranks: left open for the job's end";
  H5Fclose(id);
  {
    const gmi::io::CollectiveWriteScope scope(2);
    hid_t kept;
    {
      gmi::io::H5Handle f = gmi::io::create_file(path);
      kept = f.get();
    }
    EXPECT_LE(H5Iis_valid(kept), 0) << "no exception: closed inside the scope too";
  }
  fs::remove(path);
}

}  // namespace
