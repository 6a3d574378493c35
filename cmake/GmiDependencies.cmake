# Every third-party dependency of gmi_drl, each behind an imported target.
include_guard(GLOBAL)
include(GmiKokkos)

find_package(MPI REQUIRED COMPONENTS C CXX)

# HDF5: the parallel flavour (checkpoints are written collectively).  Debian installs it next to
# the serial one; prefer it explicitly.
set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_DEFINITIONS})
endif()

find_package(yaml-cpp REQUIRED)
if(TARGET yaml-cpp::yaml-cpp)
  set(GMI_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(GMI_YAML_TARGET yaml-cpp)   # yaml-cpp < 0.8 exports an unnamespaced target
endif()
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)  # JSON of benchmarks and tune probes (header-only)

# Counter-based host random numbers (Philox4x32-10, bit-identical to cuRAND's Philox).
find_path(GMI_RANDOM123_INCLUDE_DIR Random123/philox.h)
if(NOT GMI_RANDOM123_INCLUDE_DIR)
  message(FATAL_ERROR "Random123 headers not found: apt-get install librandom123-dev, or pass -DGMI_RANDOM123_INCLUDE_DIR=<dir containing Random123/>")
endif()
add_library(gmi::random123 INTERFACE IMPORTED)
target_include_directories(gmi::random123 SYSTEM INTERFACE "${GMI_RANDOM123_INCLUDE_DIR}")

# Host BLAS/LAPACK: CBLAS for CPU GEMMs, LAPACK for orthogonal initialisation (both builds).
find_package(OpenBLAS CONFIG QUIET)
find_path(GMI_CBLAS_INCLUDE_DIR cblas.h HINTS ${OpenBLAS_INCLUDE_DIRS} PATH_SUFFIXES openblas)
find_library(GMI_BLAS_LIBRARY NAMES openblas HINTS ${OpenBLAS_LIBRARY_DIRS})
if(NOT GMI_CBLAS_INCLUDE_DIR OR NOT GMI_BLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS (CBLAS + LAPACK) not found: apt-get install libopenblas-dev")
endif()
add_library(gmi::blas INTERFACE IMPORTED)
target_include_directories(gmi::blas SYSTEM INTERFACE "${GMI_CBLAS_INCLUDE_DIR}")
target_link_libraries(gmi::blas INTERFACE "${GMI_BLAS_LIBRARY}")

if(GMI_KOKKOS_CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_path(GMI_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
  find_library(GMI_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib)
  if(GMI_NCCL_INCLUDE_DIR AND GMI_NCCL_LIBRARY)
    add_library(gmi::nccl INTERFACE IMPORTED)
    target_include_directories(gmi::nccl SYSTEM INTERFACE "${GMI_NCCL_INCLUDE_DIR}")
    target_link_libraries(gmi::nccl INTERFACE "${GMI_NCCL_LIBRARY}")
    set(GMI_HAVE_NCCL ON)
  else()
    set(GMI_HAVE_NCCL OFF)
  endif()
  # CUTLASS (header-only): the hidden layers' tile kernels (kernels/nn/tile_gemm.cpp).
  # cmake/deps-cutlass.sh installs it in .deps/cutlass; CUTLASS_ROOT (a directory with
  # include/cutlass) takes precedence.  Without it the layers run cuBLAS and separate passes.
  set(_gmi_cutlass_hints)
  foreach(_root "${CUTLASS_ROOT}" "$ENV{CUTLASS_ROOT}" "${PROJECT_SOURCE_DIR}/.deps/cutlass")
    if(_root)
      list(APPEND _gmi_cutlass_hints "${_root}/include")
    endif()
  endforeach()
  # found again at every configure: a CUTLASS_ROOT given later takes effect
  unset(GMI_CUTLASS_INCLUDE_DIR CACHE)
  find_path(GMI_CUTLASS_INCLUDE_DIR cutlass/gemm/device/gemm.h HINTS ${_gmi_cutlass_hints} NO_DEFAULT_PATH)
  if(GMI_CUTLASS_INCLUDE_DIR)
    add_library(gmi::cutlass INTERFACE IMPORTED)
    target_include_directories(gmi::cutlass SYSTEM INTERFACE "${GMI_CUTLASS_INCLUDE_DIR}")
    target_compile_definitions(gmi::cutlass INTERFACE GMI_HAVE_CUTLASS)
    set(GMI_HAVE_CUTLASS ON)
    message(STATUS "CUTLASS: ${GMI_CUTLASS_INCLUDE_DIR}")
  else()
    set(GMI_HAVE_CUTLASS OFF)
    message(STATUS "CUTLASS not found (cmake/deps-cutlass.sh installs it): hidden layers run cuBLAS "
                   "products and separate passes")
  endif()
endif()

# MuJoCo (host-simulated environments, kernels/envs/mujoco/): the C library of the `mujoco` Python
# wheel, so that it is the same MuJoCo the Gymnasium installation the tests compare against uses.
# MUJOCO_ROOT (a directory with include/mujoco/mujoco.h and libmujoco.so*) takes precedence.
# Without it the build goes on and MuJoCo environments say "built without MuJoCo".
option(GMI_WITH_MUJOCO "Build the MuJoCo environments when MuJoCo is found" ON)
set(GMI_HAVE_MUJOCO OFF)
if(GMI_WITH_MUJOCO)
  set(_gmi_mj_hints)
  if(DEFINED ENV{MUJOCO_ROOT})
    list(APPEND _gmi_mj_hints "$ENV{MUJOCO_ROOT}")
  endif()
  if(MUJOCO_ROOT)
    list(APPEND _gmi_mj_hints "${MUJOCO_ROOT}")
  endif()
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import mujoco, os; print(os.path.dirname(mujoco.__file__))"
                    OUTPUT_VARIABLE _gmi_mj_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_gmi_mj_py)
      list(APPEND _gmi_mj_hints "${_gmi_mj_py}")
    endif()
    # Gymnasium's model files (env.model_path overrides; GMI_MUJOCO_ASSETS at run time too).
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import gymnasium, os; print(os.path.join(os.path.dirname(gymnasium.__file__), 'envs', 'mujoco', 'assets'))"
                    OUTPUT_VARIABLE GMI_MUJOCO_ASSETS OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  find_path(GMI_MUJOCO_INCLUDE_DIR mujoco/mujoco.h HINTS ${_gmi_mj_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
  file(GLOB _gmi_mj_libs LIST_DIRECTORIES false "${_gmi_mj_py}/libmujoco.so*")
  find_library(GMI_MUJOCO_LIBRARY NAMES mujoco libmujoco.so HINTS ${_gmi_mj_hints} PATH_SUFFIXES lib NO_DEFAULT_PATH)
  if(NOT GMI_MUJOCO_LIBRARY AND _gmi_mj_libs)
    list(GET _gmi_mj_libs 0 GMI_MUJOCO_LIBRARY)   # the wheel ships libmujoco.so.X.Y.Z only
  endif()
  if(GMI_MUJOCO_INCLUDE_DIR AND GMI_MUJOCO_LIBRARY)
    add_library(gmi::mujoco INTERFACE IMPORTED)
    target_include_directories(gmi::mujoco SYSTEM INTERFACE "${GMI_MUJOCO_INCLUDE_DIR}")
    target_link_libraries(gmi::mujoco INTERFACE "${GMI_MUJOCO_LIBRARY}")
    get_filename_component(GMI_MUJOCO_LIBRARY_DIR "${GMI_MUJOCO_LIBRARY}" DIRECTORY)
    set(GMI_HAVE_MUJOCO ON)
  endif()
endif()

# ONNX (gmi_drl export --onnx): the ONNX protobuf schema and its checker from Debian's
# libonnx-dev.  Without it the build goes on and `gmi_drl export` says "built without ONNX".
option(GMI_WITH_ONNX "Build gmi_drl export --onnx when ONNX is found" ON)
set(GMI_HAVE_ONNX OFF)
if(GMI_WITH_ONNX)
  find_package(ONNX CONFIG QUIET)
  find_package(Protobuf QUIET)
  if(TARGET onnx AND TARGET onnx_proto AND Protobuf_FOUND)
    set(GMI_HAVE_ONNX ON)
  endif()
endif()
