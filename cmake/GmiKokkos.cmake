# Provides the imported target gmi::kokkos for two kinds of Kokkos installation:
#  * a CMake-native Kokkos >= 4 (Spack, site modules, your own build): exports Kokkos::kokkos;
#  * Debian/Ubuntu's Trilinos Kokkos 3.4 (libtrilinos-kokkos-dev): a TriBITS config whose
#    Kokkos::kokkos target names an include directory that does not exist (/usr/lib/include) and
#    links a stray "-DKOKKOS_DEPENDENCE".  We locate the headers and the library ourselves and
#    never use that target.
include_guard(GLOBAL)

find_package(Kokkos CONFIG QUIET)

if(TARGET Kokkos::kokkos AND NOT TARGET trilinos_kokkoscore)
  add_library(gmi::kokkos INTERFACE IMPORTED)
  target_link_libraries(gmi::kokkos INTERFACE Kokkos::kokkos)
  set(GMI_KOKKOS_FLAVOR "Kokkos ${Kokkos_VERSION} (CMake package)")
else()
  # TriBITS-style installation.  Find the real header and library locations.
  set(_gmi_kokkos_hints)
  foreach(_d IN LISTS Kokkos_INCLUDE_DIRS)
    list(APPEND _gmi_kokkos_hints "${_d}")
  endforeach()
  find_path(GMI_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp
    HINTS ${_gmi_kokkos_hints}
    PATHS /usr/include/trilinos /usr/local/include/trilinos
    PATH_SUFFIXES trilinos)
  find_library(GMI_KOKKOS_CORE_LIBRARY NAMES trilinos_kokkoscore kokkoscore
    HINTS ${Kokkos_LIBRARY_DIRS})
  if(NOT GMI_KOKKOS_INCLUDE_DIR OR NOT GMI_KOKKOS_CORE_LIBRARY)
    message(FATAL_ERROR
      "Kokkos not found. CPU build: apt-get install libtrilinos-kokkos-dev. "
      "GPU build: cmake/deps-cuda.sh KOKKOS_SOURCE PREFIX builds Kokkos with CUDA (see "
      "cmake/README.md; or your site's Kokkos >= 4 with Kokkos_ENABLE_CUDA=ON), then "
      "KOKKOS_ROOT=PREFIX cmake --preset cuda.")
  endif()
  file(STRINGS "${GMI_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h" _gmi_kv REGEX "#define KOKKOS_VERSION ")
  string(REGEX REPLACE ".*KOKKOS_VERSION ([0-9]+).*" "\\1" _gmi_kv "${_gmi_kv}")
  file(STRINGS "${GMI_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h" _gmi_kcuda REGEX "^#define KOKKOS_ENABLE_CUDA$")
  if(_gmi_kcuda)
    message(FATAL_ERROR "A TriBITS (Trilinos) Kokkos with CUDA is not supported; use a CMake-native Kokkos >= 4.")
  endif()
  add_library(gmi::kokkos INTERFACE IMPORTED)
  target_include_directories(gmi::kokkos SYSTEM INTERFACE "${GMI_KOKKOS_INCLUDE_DIR}")
  target_link_libraries(gmi::kokkos INTERFACE "${GMI_KOKKOS_CORE_LIBRARY}" ${CMAKE_DL_LIBS})
  set(Kokkos_VERSION "${_gmi_kv}")
  set(GMI_KOKKOS_FLAVOR "Trilinos Kokkos ${_gmi_kv} (${GMI_KOKKOS_CORE_LIBRARY})")
endif()

# Which device backend does this Kokkos have?  Kokkos >= 4 exports Kokkos_ENABLE_CUDA / kokkos_check.
set(GMI_KOKKOS_CUDA OFF)
if(Kokkos_ENABLE_CUDA OR "CUDA" IN_LIST Kokkos_DEVICES)
  set(GMI_KOKKOS_CUDA ON)
endif()
